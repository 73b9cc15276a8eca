import Foundation
import GatehouseProxy

/// Sends bytes over a plain TCP connection and returns everything received until the peer
/// closes or `timeout` passes: for requests no well-behaved client would send.
enum RawHTTP {
    static func exchange(port: Int, _ request: String, timeout: Duration = .seconds(2)) -> String {
        exchange(port: port, Array(request.utf8), timeout: timeout)
    }

    static func exchange(port: Int, _ bytes: [UInt8], timeout: Duration = .seconds(2)) -> String {
        guard let connection = Connection(port: port, timeout: timeout) else { return "" }
        connection.send(bytes)
        return connection.receive()
    }

    /// A connection to talk over in turns (send, read, send again).
    final class Connection {
        let descriptor: Int32

        init?(port: Int, timeout: Duration) {
            descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { return nil }
            guard RawHTTP.connect(descriptor, port: port, timeout: timeout) else {
                close(descriptor)
                return nil
            }
        }

        deinit { close(descriptor) }

        func send(_ text: String) { send(Array(text.utf8)) }

        func send(_ bytes: [UInt8]) {
            var offset = 0
            while offset < bytes.count {
                let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent <= 0 { return }
                offset += sent
            }
        }

        /// Reads until the peer closes, the timeout passes, or `until` is seen.
        func receive(until marker: String? = nil) -> String {
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                received.append(contentsOf: chunk[0..<count])
                if let marker, String(decoding: received, as: UTF8.self).contains(marker) { break }
            }
            return String(decoding: received, as: UTF8.self)
        }

        /// Whether the peer has closed: a read that does not wait finds the end of the stream.
        var peerClosed: Bool {
            var byte: UInt8 = 0
            return recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT)) == 0
        }
    }

    private static func connect(_ descriptor: Int32, port: Int, timeout: Duration) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return false }
        var interval = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        return true
    }

    /// Status codes of every response in `text`, in order.
    static func statuses(_ text: String) -> [Int] {
        text.components(separatedBy: "HTTP/1.1 ").dropFirst().compactMap { Int($0.prefix(3)) }
    }
}
