import Crypto
package import Foundation
import NIOConcurrencyHelpers
import GatehouseSyntax
import GatehouseVocabulary

/// Where failure-log lines go.
public enum FailureLogDestination: Sendable {
    case standardOutput
    /// Appended; reopened by `FailureLog.reopen()` (SIGHUP, for logrotate).
    case file(String)
    /// Every line handed to a closure (tests, embedding).
    case custom(@Sendable (String) -> Void)
}

/// The security team's stream: one JSON line per request answered 401/403/503 and nothing else,
/// rate limited with a once-a-second `auth_failure_suppressed` summary of what was dropped.
///
/// Lines are written synchronously under a lock: at most `max_lines_per_second` of them, so the
/// cost is bounded, and a line is never lost to a crash after the response.
public final class FailureLog: Sendable {
    private struct State {
        var second: Int64 = 0
        var linesThisSecond = 0
        var suppressed = 0
        var fileDescriptor: Int32 = -1
        /// A line was cut short and could not be taken back: the next one starts on a fresh line.
        var lineTorn = false
    }

    private let destination: FailureLogDestination
    private let maxLinesPerSecond: Int
    private let pseudonymKey: SymmetricKey?
    private let state = NIOLockedValueBox(State())
    /// Told of every line not written whole (its errno): a metric and a rate-limited operational log line.
    private let writeFailed: @Sendable (Int32) -> Void

    public struct OpenError: Error, CustomStringConvertible {
        public var description: String

        package init(description: String) {
            self.description = description
        }
    }

    public init(
        destination: FailureLogDestination, maxLinesPerSecond: Int, pseudonymKey: [UInt8]? = nil,
        writeFailed: @escaping @Sendable (Int32) -> Void = { _ in }
    ) throws(OpenError) {
        self.destination = destination
        self.writeFailed = writeFailed
        self.maxLinesPerSecond = maxLinesPerSecond
        self.pseudonymKey = pseudonymKey.map { SymmetricKey(data: $0) }
        try reopen()
    }

    deinit {
        let descriptor = state.withLockedValue { $0.fileDescriptor }
        if descriptor > 2 { close(descriptor) }
    }

    /// Opens the file anew (after logrotate moved it). A no-op for other destinations.
    public func reopen() throws(OpenError) {
        guard case .file(let path) = destination else { return }
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
        guard descriptor >= 0 else {
            throw OpenError(description: "cannot open failure log \(path): \(String(cString: strerror(errno)))")
        }
        let old = state.withLockedValue { state in
            defer { state.fileDescriptor = descriptor }
            return state.fileDescriptor
        }
        if old > 2 { close(old) }
    }

    package func record(_ event: FailureEvent) {
        let now = Int64(event.timestamp.timeIntervalSince1970)
        // Decide under the lock, format outside it, and only lines that will be written.
        let admitted = state.withLockedValue { state -> Bool in
            rollOver(&state, to: now)
            guard state.linesThisSecond < maxLinesPerSecond else {
                state.suppressed += 1
                return false
            }
            state.linesThisSecond += 1
            return true
        }
        guard admitted else { return }
        let line = event.jsonLine(subject: event.failure.subject.map(pseudonymized))
        state.withLockedValue { emit(line, &$0) }
    }

    /// Writes the summary of a finished second that dropped lines; called once a second by the server.
    package func flushSuppressed(now: Date = Date()) {
        state.withLockedValue { rollOver(&$0, to: Int64(now.timeIntervalSince1970)) }
    }

    private func rollOver(_ state: inout State, to second: Int64) {
        guard second != state.second else { return }
        if state.suppressed > 0 {
            emit("{\"ts\":\(FailureEvent.timestamp(Date()).jsonQuoted),\"event\":\"auth_failure_suppressed\",\"count\":\(state.suppressed)}", &state)
        }
        state.second = second
        state.linesThisSecond = 0
        state.suppressed = 0
    }

    private func emit(_ line: String, _ state: inout State) {
        switch destination {
        case .custom(let sink):
            sink(line)
        case .standardOutput:
            write(line, to: STDOUT_FILENO, ownsFile: false, &state)
        case .file:
            write(line, to: state.fileDescriptor, ownsFile: true, &state)
        }
    }

    /// Writes the line and its newline whole, or reports why not (docs/reference.md §8). A line cut
    /// short (a disk that filled mid-line, a file-size limit) is taken back by truncating the file to
    /// where it began; where that is impossible or not ours to do (standard output may be a pipe, or a
    /// file other writers share) the next line starts with a newline. Either way every complete line of
    /// the stream stays one JSON object (docs/security.md L05).
    private func write(_ line: String, to descriptor: Int32, ownsFile: Bool, _ state: inout State) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(line.utf8.count + 2)
        if state.lineTorn { bytes.append(UInt8(ascii: "\n")) }
        bytes.append(contentsOf: line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        let start = ownsFile ? lseek(descriptor, 0, SEEK_END) : -1  // the file is O_APPEND: where this line begins
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, bytes.count - offset) }  // safe: non-empty
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                let error = written == 0 ? EIO : errno
                // Cut short: take the fragment back; failing that, the next line starts on a fresh one.
                if offset > 0 && !(start >= 0 && ftruncate(descriptor, start) == 0) { state.lineTorn = true }
                writeFailed(error)
                return
            }
            offset += written
        }
        state.lineTorn = false
    }

    /// With `pseudonymize`, `sub` is HMAC-SHA256 (hex) under the configured key.
    private func pseudonymized(_ subject: String) -> String {
        guard let pseudonymKey else { return subject }
        let mac = HMAC<SHA256>.authenticationCode(for: Array(subject.utf8), using: pseudonymKey)
        return "hmac:" + mac.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
