#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Runs helper programs (PostgreSQL, nginx) with posix_spawn + waitpid: Foundation's
/// `Process.waitUntilExit` never returns for `pg_ctl start`, whose server outlives it.
enum ChildProcess {
    struct Failed: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs to completion; throws with the program's output unless it exits 0.
    static func run(_ argv: [String]) throws {
        let outputPath = NSTemporaryDirectory() + "gatehouse-child-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let pid = try spawn(argv, outputPath: outputPath)
        let exitCode = wait(pid)
        guard exitCode == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw Failed(description: "\(argv.joined(separator: " ")) failed (\(exitCode)): \(text)")
        }
    }

    /// Runs `argv` to its end and returns its exit code (-1 when a signal ended it) and its output
    /// (stdout and stderr), without blocking a thread of Swift's cooperative pool meanwhile
    /// (waitpid WNOHANG between short sleeps): on a 2-core machine two blocked waits would stall
    /// every other suite of this process, and Gatehouse's own background work, while they last.
    /// Killed after `timeout`.
    static func runToEnd(_ argv: [String], timeout: Duration = .seconds(60)) async throws -> (exitCode: Int32, output: String) {
        let outputPath = NSTemporaryDirectory() + "gatehouse-child-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let pid = try spawn(argv, outputPath: outputPath)
        let deadline = ContinuousClock.now + timeout
        var status: Int32 = 0
        while true {
            let waited = waitpid(pid, &status, WNOHANG)
            if waited == pid { break }
            if waited == -1 && errno != EINTR { throw Failed(description: "waitpid failed for \(argv)") }
            do {
                guard ContinuousClock.now < deadline else { throw Failed(description: "\(argv) ran past \(timeout)") }
                try await Task.sleep(for: .milliseconds(10))
            } catch {
                kill(pid, SIGKILL)
                wait(pid)
                throw error
            }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return ((status & 0x7F) == 0 ? (status >> 8) & 0xFF : -1, output)
    }

    /// Starts `argv` with stdin from /dev/null and stdout+stderr into `outputPath`.
    static func spawn(_ argv: [String], outputPath: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of the test process: its sockets are not all close-on-exec (NIO's accepted ones, a fake
        // upstream's), and a helper holding one would keep a port open or a connection alive after the test let go.
        // (glibc 2.34's posix_spawn_file_actions_addclosefrom_np, which its Swift module map does not show.)
        guard let closeFrom = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            throw Failed(description: "this libc has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later is needed)")
        }
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard unsafeBitCast(closeFrom, to: AddCloseFrom.self)(&actions, 3) == 0 else {
            throw Failed(description: "posix_spawn_file_actions_addclosefrom_np: errno \(errno)")
        }
        // The test's threads are libdispatch workers, which block signals, and a spawned program
        // inherits that mask: its SIGTERM would stay pending forever. Start it with no signal
        // blocked and every signal at its default.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var defaulted = sigset_t()
        sigemptyset(&defaulted)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGCHLD] { sigaddset(&defaulted, signal) }
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &defaulted)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, &attributes, cArguments, environ)
        guard spawned == 0 else { throw Failed(description: "cannot run \(argv[0]): errno \(spawned)") }
        return pid
    }

    /// Asks the process to stop (SIGTERM) and waits for it; after `grace` it is killed (SIGKILL), so a
    /// helper that hangs on its way out cannot hang the test run with it.
    static func stop(_ pid: pid_t, grace: Duration = .seconds(5)) {
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + grace
        var status: Int32 = 0
        while ContinuousClock.now < deadline {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid || (result == -1 && errno != EINTR) { return }
            usleep(20_000)
        }
        kill(pid, SIGKILL)
        wait(pid)
    }

    /// Waits for the process; its exit code, or -1 when a signal ended it.
    @discardableResult
    static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : -1
    }
}
