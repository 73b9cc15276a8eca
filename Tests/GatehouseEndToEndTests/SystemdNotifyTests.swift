#if canImport(Glibc)
import Glibc
#endif
import Foundation
import NIOCore
@testable import Gatehouse
import Testing

/// `Type=notify` (deploy/systemd, issue 43): `gatehouse serve` under a `$NOTIFY_SOCKET` of the test's own (a unix
/// datagram socket, as systemd's) says `READY=1` once `/readyz` is 200 (not before its keys are in), `RELOADING=1`
/// with `MONOTONIC_USEC` and `READY=1` around a SIGHUP, and `STOPPING=1` when SIGTERM starts the drain.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SystemdNotifyTests {
    /// A bound `AF_UNIX` datagram socket, read without blocking.
    final class NotifySocket {
        let path: String
        let descriptor: Int32

        init() throws {
            path = NSTemporaryDirectory() + "gatehouse-notify-\(UUID().uuidString.prefix(8)).sock"
            descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { buffer in
                for (index, byte) in path.utf8.enumerated() { buffer[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard descriptor >= 0, bound == 0 else { throw ChildProcess.Failed(description: "cannot bind \(path)") }
            chmod(path, 0o666)
        }

        /// Every message that has arrived so far.
        func drain() -> [String] {
            var messages: [String] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(descriptor, &buffer, buffer.count, 0)
                guard count > 0 else { return messages }
                messages.append(String(decoding: buffer[..<count], as: UTF8.self))
            }
        }

        deinit {
            close(descriptor)
            unlink(path)
        }
    }

    /// deploy/systemd/gatehouse.service's own lines, run as systemd runs them (no systemd here to run the unit): its
    /// `ExecStartPre`, then its `ExecStart` as an unprivileged user (the unit's `DynamicUser`) under its `LimitNOFILE`,
    /// with a `$NOTIFY_SOCKET` (`Type=notify`) and only the binary and configuration paths replaced. READY=1 comes, the
    /// process has the unit's limit, `ExecReload` brings RELOADING=1 and READY=1, `KillSignal` STOPPING=1 and exit 0
    /// within `TimeoutStopSec`.
    @Test func theUnitsOwnCommandsRunAsSystemdWouldRunThem() async throws {
        let unit = try String(contentsOf: ProxyExampleBlocksTests.repository.appendingPathComponent("deploy/systemd/gatehouse.service"), encoding: .utf8)
        func value(_ key: String) throws -> String {
            try #require(unit.split(separator: "\n").first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }, "no \(key)")
        }
        #expect(try value("Type") == "notify")
        #expect(try value("KillSignal") == "SIGTERM")
        // The unit's LimitNOFILE, or this sandbox's hard limit where that is lower (raising it is forbidden here); a
        // low soft limit beside it, which `serve` raises to the hard one.
        var own = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &own)
        let limit = min(try #require(Int(try value("LimitNOFILE"))), Int(own.rlim_max))
        let timeout = try #require(Int(try value("TimeoutStopSec").dropLast()))
        let binary = try UnprivilegedServeTests.reachableCopy.get()
        let notify = try NotifySocket()
        let jwks = try await TestJWKSServer(jwks: TestSigner.jwks([.ec]))
        let upstream = try await TestUpstream()
        let folder = try Contract.makeDirectory("unit")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        do {
            let (port, admin) = (try await freeLoopbackPort(), try await freeLoopbackPort())
            try ServedGatehouse.configuration(port: port, adminPort: admin, Contract.toml(upstreamPort: upstream.port, jwks: jwks))
                .write(toFile: folder + "/gatehouse.toml", atomically: true, encoding: .utf8)
            func command(_ line: String) -> [String] {
                line.replacingOccurrences(of: "/usr/local/bin/gatehouse", with: binary)
                    .replacingOccurrences(of: "/etc/gatehouse/gatehouse.toml", with: folder + "/gatehouse.toml").split(separator: " ").map(String.init)
            }
            let pre = try await ChildProcess.runToEnd(UnprivilegedServeTests.unprivileged + command(try value("ExecStartPre")))
            #expect(pre.exitCode == 0, "ExecStartPre: \(pre.output)")
            let output = folder + "/output.log"
            let pid = try ChildProcess.spawn(
                ["/usr/bin/prlimit", "--nofile=1024:\(limit)", "--"] + UnprivilegedServeTests.unprivileged
                    + ["/usr/bin/env", "NOTIFY_SOCKET=\(notify.path)"] + command(try value("ExecStart")), outputPath: output)
            var messages: [String] = []
            let ready = await Contract.eventually {
                messages += notify.drain()
                return messages.contains { $0.hasPrefix("READY=1") }
            }
            let log = { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }
            #expect(ready, "no READY=1: \(messages) \(log())")
            // `MAINPID`: the serving process (runuser's child, prlimit having exec'd runuser).
            let serving = UnprivilegedServeTests.unprivileged.isEmpty ? pid : try #require(
                try await ChildProcess.runToEnd(["/usr/bin/pgrep", "-P", String(pid)]).output.split(separator: "\n").first.flatMap { Int32($0) },
                "no child of \(pid)")
            let limits = (try? String(contentsOfFile: "/proc/\(serving)/limits", encoding: .utf8)) ?? ""
            // The soft limit (the first figure) raised from 1024 to the hard one by `serve` itself.
            let soft = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }?.split(separator: " ").dropFirst(3).first
            #expect(soft.flatMap { Int($0) } == limit, "\(limits)")

            messages = []
            let reload = try await ChildProcess.runToEnd(try value("ExecReload").replacingOccurrences(of: "$MAINPID", with: String(serving))
                .split(separator: " ").map(String.init))
            #expect(reload.exitCode == 0)
            #expect(await Contract.eventually { messages += notify.drain(); return messages.contains { $0.hasPrefix("READY=1") } }, "\(messages)")
            #expect(messages.first?.hasPrefix("RELOADING=1") == true, "\(messages)")

            messages = []
            kill(serving, SIGTERM)
            let stopping = ContinuousClock.now
            let exited = ChildProcess.wait(pid)
            #expect(exited == 0, "exit \(exited): \(log())")
            #expect(ContinuousClock.now - stopping < .seconds(timeout))
            messages += notify.drain()
            #expect(messages == ["STOPPING=1"], "\(messages)")
        } catch {
            Issue.record(error)
        }
        await jwks.close()
        await upstream.close()
    }

    @Test func serveTellsSystemdWhenItIsReadyReloadingAndStopping() async throws {
        let notify = try NotifySocket()
        let jwks = try await TestJWKSServer(jwks: TestSigner.jwks([.ec]))
        let upstream = try await TestUpstream()
        // The keys are slow to come: READY=1 must wait for them.
        jwks.update { $0.delay = .milliseconds(800) }
        do {
            let process = try await ServedGatehouse(
                toml: Contract.toml(upstreamPort: upstream.port, jwks: jwks), prefix: ["/usr/bin/env", "NOTIFY_SOCKET=\(notify.path)"],
                waitUntilReady: false)
            defer { process.stop() }
            var messages: [String] = []
            let ready = await Contract.eventually {
                messages += notify.drain()
                return messages.contains { $0.split(separator: "\n").contains("READY=1") }
            }
            #expect(ready, "no READY=1: \(messages)\n\(process.output)")
            #expect(try await process.admin("/readyz").status == 200, "READY=1 before /readyz was 200")
            #expect(jwks.fetchCount >= 1)

            messages = []
            try await process.hangUp()
            #expect(await Contract.eventually { messages += notify.drain(); return messages.count >= 2 }, "\(messages)")
            #expect(messages.first?.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") == true, "\(messages)")
            #expect(messages.last?.hasPrefix("READY=1") == true, "\(messages)")

            messages = []
            process.signal(SIGTERM)
            #expect(await process.exitCode(within: .seconds(10)) == 0)
            messages += notify.drain()
            #expect(messages == ["STOPPING=1"], "\(messages)")
        } catch {
            Issue.record(error)
        }
        await jwks.close()
        await upstream.close()
    }
}
