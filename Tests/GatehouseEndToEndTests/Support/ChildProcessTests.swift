import Glibc
import Testing

/// The helper programs the suite starts (nginx, Envoy, PostgreSQL, openssl) get stdin, stdout and stderr and nothing
/// else of the test process: a socket they inherited would keep a port or a connection open after the test let go.
struct ChildProcessTests {
    @Test func aSpawnedProgramInheritsOnlyItsStandardStreams() async throws {
        let leaked = open("/dev/null", O_RDONLY)  // not close-on-exec, as a socket some library opened may not be
        try #require(leaked >= 3)
        defer { close(leaked) }
        let (exitCode, output) = try await ChildProcess.runToEnd(["/bin/sh", "-c", "ls /proc/$$/fd"])
        #expect(exitCode == 0)
        #expect(output.split(separator: "\n").sorted() == ["0", "1", "2"], "the program had \(output)")
    }
}
