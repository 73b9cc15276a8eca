#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The sd_notify protocol (systemd's `Type=notify`): datagrams of `KEY=value` lines to the socket `$NOTIFY_SOCKET`
/// names (a path, or an abstract name written `@name`). `READY=1` once `/readyz` would answer 200, `RELOADING=1`
/// (with `MONOTONIC_USEC`) and `READY=1` around a SIGHUP reload, `STOPPING=1` when the drain begins. Without
/// `$NOTIFY_SOCKET` (not under systemd) every call does nothing.
struct SystemdNotifier: Sendable {
    let socketPath: String?

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    var isActive: Bool { socketPath != nil }

    /// Sends one message; a failure is returned, never thrown (systemd's own sd_notify ignores them too).
    @discardableResult
    func send(_ message: String) -> Bool {
        guard let socketPath else { return false }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // the abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.enumerated() { buffer[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == 0 ? 0 : 1))
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                sendto(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL), socketAddress, length)
            }
        }
        return sent == bytes.count
    }

    /// `RELOADING=1` with the monotonic time systemd wants beside it (CLOCK_MONOTONIC, microseconds).
    static func reloadingMessage() -> String {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return "RELOADING=1\nMONOTONIC_USEC=\(Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000)"
    }
}
