import AsyncHTTPClient
import Foundation
@testable import Gatehouse
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseTelemetry
import GatehouseAuth
import GatehouseExchange
import GatehouseProxy

/// deploy/docker/Dockerfile built (scripts/image.sh: podman, the Dockerfile's own runtime stage given the binary built
/// here, where no registry is reachable) and run as a user runs it (issue 43): non-root, read-only root file system,
/// the configuration mounted read-only; /healthz and /readyz; a token forwarded with its identity, none refused 401;
/// the image's health check; SIGTERM drains the request in flight and exits 0. No shell in the image; the labels and
/// `--version` name the commit.
@Suite(.serialized, .timeLimit(.minutes(30)))
struct ContainerImageTests {
    static let tag = "localhost/gatehouse:test"

    /// podman as scripts/image.sh configures it (runc, no default ulimits).
    static func podman(_ arguments: [String], timeout: Duration = .seconds(120)) async throws -> (exitCode: Int32, output: String) {
        let configuration = FileManager.default.homeDirectoryForCurrentUser.path + "/.cache/gatehouse/containers.conf"
        return try await ChildProcess.runToEnd(["/usr/bin/env", "CONTAINERS_CONF=\(configuration)", "podman"] + arguments, timeout: timeout)
    }

    static func checkout() async throws -> String {
        let repository = ProxyExampleBlocksTests.repository.path
        return try await ChildProcess.runToEnd(["/usr/bin/env", "git", "-C", repository, "rev-parse", "HEAD"]).output
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The Dockerfile's build stage copies what the manifest needs (issue 43: it left out Fuzz/, and SwiftPM refused
    /// the manifest, "invalid custom path 'Fuzz/FuzzSupport'"): the manifest is read in a folder holding exactly what
    /// its COPY lines copy. (The stage itself needs the Swift image from a registry; scripts/image.sh builds the rest.)
    @Test func theBuildStageCopiesEveryPathTheManifestNames() async throws {
        let repository = ProxyExampleBlocksTests.repository.path
        let dockerfile = try String(contentsOfFile: repository + "/deploy/docker/Dockerfile", encoding: .utf8)
        let stage = dockerfile.components(separatedBy: "\nFROM ").first { $0.contains("AS build") } ?? ""
        let copied = stage.split(separator: "\n").filter { $0.hasPrefix("COPY ") }.compactMap { $0.split(separator: " ").dropFirst().first.map(String.init) }
        #expect(copied.contains("Package.swift") && copied.contains("Sources"), "\(copied)")
        let folder = NSTemporaryDirectory() + "gatehouse-build-stage-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for path in copied { try FileManager.default.copyItem(atPath: repository + "/" + path, toPath: folder + "/" + path) }
        let described = try await ChildProcess.runToEnd(["/usr/bin/env", "swift", "package", "--package-path", folder, "describe", "--type", "json"],
                                                        timeout: .seconds(300))
        #expect(described.exitCode == 0, "\(described.output.suffix(2000))")
    }

    /// Each Kubernetes manifest's Gatehouse container run as its Pod spec says, with the real image: its args, its
    /// user, a read-only root file system, no capabilities, no privilege escalation, its ConfigMap and Secret mounted
    /// read-only where it mounts them (a Secret's items with stand-in values). Its liveness probe's endpoint answers
    /// 200 on the port the configuration's admin listens on (the probe's port is that port), its readiness endpoint
    /// answers (503 here: no network, so no provider keys), and a stop within its termination grace period exits 0.
    @Test(arguments: ["deploy/kubernetes/sidecar.yaml", "deploy/kubernetes/sidecar-grpc.yaml", "deploy/kubernetes/sidecar-postgres.yaml",
                      "deploy/istio/gatehouse.yaml"])
    func eachManifestsGatehouseContainerRunsAsItsPodSpecSays(_ manifest: String) async throws {
        let built = try await ChildProcess.runToEnd([ProxyExampleBlocksTests.repository.path + "/scripts/image.sh", Self.tag], timeout: .seconds(1500))
        try #require(built.exitCode == 0, "scripts/image.sh: \(built.output.suffix(3000))")
        let folder = try Contract.makeDirectory("pod")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // The Pod spec as podman arguments, read by PyYAML: mounts materialized under `folder`.
        let extract = """
            import json, os, sys, yaml
            path, folder = sys.argv[1], sys.argv[2]
            documents = [d for d in yaml.safe_load_all(open(path)) if d]
            maps = {d["metadata"]["name"]: d.get("data", {}) for d in documents if d["kind"] == "ConfigMap"}
            pod = next(d for d in documents if d["kind"] in ("Deployment", "StatefulSet"))["spec"]["template"]["spec"]
            container = next(c for c in pod["containers"] if c["name"] == "gatehouse")
            context = container.get("securityContext", {})
            volumes = {v["name"]: v for v in pod.get("volumes", [])}
            arguments = ["--user", str(context["runAsUser"]), "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
            if context.get("readOnlyRootFilesystem"): arguments.append("--read-only")
            for mount in container.get("volumeMounts", []):
                volume, target = volumes[mount["name"]], os.path.join(folder, mount["name"])
                os.makedirs(target, exist_ok=True)
                if "configMap" in volume:
                    for name, text in maps[volume["configMap"]["name"]].items():
                        open(os.path.join(target, name), "w").write(text)
                elif "secret" in volume:
                    for item in volume["secret"].get("items", []):
                        open(os.path.join(target, item["path"]), "w").write("stand-in-secret\\n")
                for name in os.listdir(target): os.chmod(os.path.join(target, name), 0o644)
                os.chmod(target, 0o755)
                arguments += ["--volume", target + ":" + mount["mountPath"] + ":ro"]
            ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
            config = next(a for a in container["args"][container["args"].index("--config") + 1:][:1])
            print(json.dumps({"podman": arguments, "args": container["args"], "config": config,
                              "liveness": container["livenessProbe"]["httpGet"]["path"], "readiness": container["readinessProbe"]["httpGet"]["path"],
                              "probePort": ports[container["livenessProbe"]["httpGet"]["port"]],
                              "grace": pod.get("terminationGracePeriodSeconds", 30)}))
            """
        let extracted = try await ChildProcess.runToEnd(["/usr/bin/env", "python3", "-c", extract,
                                                         ProxyExampleBlocksTests.repository.path + "/" + manifest, folder])
        try #require(extracted.exitCode == 0, "\(extracted.output)")
        let spec = try #require(try StrictJSON.parse(Array(extracted.output.utf8)).objectValue, "\(extracted.output)")
        let podman = (spec["podman"]?.arrayValue ?? []).compactMap(\.stringValue)
        let args = (spec["args"]?.arrayValue ?? []).compactMap(\.stringValue)
        let configPath = try #require(spec["config"]?.stringValue)
        #expect(spec["liveness"]?.stringValue == "/healthz" && spec["readiness"]?.stringValue == "/readyz", "\(spec)")
        // The probes' port is the one the configuration's admin listens on.
        let mountedConfig = try Configuration.load(fromFile: folder + "/config/" + (configPath as NSString).lastPathComponent)
        #expect(Int64(mountedConfig.admin.address.port) == spec["probePort"]?.integerValue, "\(spec); admin \(mountedConfig.admin.address)")

        let name = "gatehouse-pod-\(UUID().uuidString.prefix(8))"
        let started = try await Self.podman(["run", "--detach", "--name", name, "--network", "none", "--health-interval", "disable"]
            + podman + [Self.tag] + args)
        try #require(started.exitCode == 0, "\(manifest): \(started.output)")
        do {
            let live = await Contract.eventually(timeout: .seconds(20)) {
                (try? await Self.podman(["exec", name, "/usr/local/bin/gatehouse", "health", "--config", configPath]).exitCode) == 0
            }
            let logs = (try? await Self.podman(["logs", name]).output) ?? ""
            #expect(live, "\(manifest): /healthz never answered 200 on the admin port: \(logs)")
            let ready = try await Self.podman(["exec", name, "/usr/local/bin/gatehouse", "health", "--ready", "--config", configPath])
            #expect(ready.output.contains("/readyz: 503") || ready.output.contains("/readyz: 200"), "\(manifest): \(ready.output)")
            let grace = Int(spec["grace"]?.integerValue ?? 30)
            let stopping = ContinuousClock.now
            let stopped = try await Self.podman(["stop", "--time", String(grace), name], timeout: .seconds(grace + 30))
            #expect(stopped.exitCode == 0)
            #expect(ContinuousClock.now - stopping < .seconds(grace), "\(manifest): the stop outlasted terminationGracePeriodSeconds")
            let exit = try await Self.podman(["inspect", "--format", "{{.State.ExitCode}}", name]).output
            #expect(exit.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "\(manifest): exit \(exit)")
        } catch {
            Issue.record(error)
        }
        _ = try? await Self.podman(["rm", "--force", name])
    }

    @Test func theImageRunsAsAUserWouldRunIt() async throws {
        // The commit as the build sees it (read first: the image is named after the commit it was built from).
        let commit = try await Self.checkout()
        let built = try await ChildProcess.runToEnd([ProxyExampleBlocksTests.repository.path + "/scripts/image.sh", Self.tag], timeout: .seconds(1500))
        try #require(built.exitCode == 0, "scripts/image.sh: \(built.output.suffix(3000))")

        // What the image says of itself.
        let labels = try StrictJSON.parse(Array(try await Self.podman(["image", "inspect", "--format", "{{json .Config.Labels}}", Self.tag]).output.utf8))
        #expect(labels.objectValue?["org.opencontainers.image.revision"]?.stringValue?.hasPrefix(commit) == true, "\(labels)")
        #expect(labels.objectValue?["org.opencontainers.image.version"]?.stringValue == GatehouseVersion.string, "\(labels)")
        let version = try await Self.podman(["run", "--rm", "--network", "none", "--health-interval", "disable", Self.tag, "--version"])
        // (podman writes its own complaints to the same output: systemd is missing for health-check timers.)
        #expect(version.exitCode == 0 && version.output.split(separator: "\n").contains { $0.hasPrefix("\(GatehouseVersion.string) (\(commit)") },
                "\(version.output)")
        let shell = try await Self.podman(["run", "--rm", "--network", "none", "--health-interval", "disable", "--entrypoint", "/bin/sh", Self.tag, "-c", "true"])
        #expect(shell.exitCode != 0, "the image has a shell: \(shell.output)")
        let size = try await Self.podman(["image", "inspect", "--format", "{{.Size}}", Self.tag]).output
        print("container image \(Self.tag): \((Int(size.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >> 20) MiB")

        let jwks = try await TestJWKSServer(jwks: TestSigner.jwks([.ec]))
        let upstream = try await TestUpstream()
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: .init(redirectConfiguration: .disallow))
        let name = "gatehouse-test-\(UUID().uuidString.prefix(8))"
        let folder = NSTemporaryDirectory() + name
        do {
            let (port, admin) = (try await freeLoopbackPort(), try await freeLoopbackPort())
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let configuration = """
                [listen]
                address = "127.0.0.1:\(port)"
                [admin]
                address = "127.0.0.1:\(admin)"
                [upstream]
                url = "http://127.0.0.1:\(upstream.port)"
                [[provider]]
                name = "test"
                type = "jwks"
                issuer = "\(Claims.issuer)"
                jwks_uri = "\(jwks.jwksURL.absoluteString)"
                audiences = ["\(Claims.audience)"]
                """
            try configuration.write(toFile: folder + "/gatehouse.toml", atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: folder + "/gatehouse.toml")
            // As a user runs it: read-only root file system and configuration; the image's own non-root user. The
            // health check is run below by hand: podman's timer for it needs systemd, which these machines lack.
            let started = try await Self.podman([
                "run", "--detach", "--name", name, "--network", "host", "--read-only", "--health-interval", "disable",
                "--volume", "\(folder)/gatehouse.toml:/etc/gatehouse/gatehouse.toml:ro", Self.tag,
            ])
            try #require(started.exitCode == 0, "podman run: \(started.output)")

            func get(_ path: String, port: Int, token: String? = nil) async throws -> (status: Int, body: String) {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
                if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
                let response = try await client.execute(request, timeout: .seconds(10))
                return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
            }
            let ready = await Contract.eventually(timeout: .seconds(30)) { (try? await get("/readyz", port: admin).status) == 200 }
            let logs = { (try? await Self.podman(["logs", name]).output) ?? "" }
            if !ready {
                let output = await logs()
                Issue.record("never ready: \(output)")
                throw CancellationError()
            }
            #expect(try await get("/healthz", port: admin).status == 200)

            let inspected = try await Self.podman(["inspect", "--format", "{{.State.Pid}} {{.HostConfig.ReadonlyRootfs}} {{.Config.User}}", name]).output
            let fields = inspected.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            #expect(fields.count == 3 && fields[1] == "true" && fields[2] == "65532:65532", "\(inspected)")
            let status = (try? String(contentsOfFile: "/proc/\(fields.first ?? "0")/status", encoding: .utf8)) ?? ""
            #expect(status.split(separator: "\n").contains { $0.hasPrefix("Uid:") && $0.split(separator: "\t").dropFirst().allSatisfy { $0 == "65532" } },
                    "the process runs as 65532: \(status.split(separator: "\n").filter { $0.hasPrefix("Uid:") })")

            let refused = try await get("/v1/orders", port: port)
            #expect(refused.status == 401 && refused.body.contains("missing_token"), "\(refused)")
            let allowed = try await get("/v1/orders", port: port, token: TestSigner.ec.token(claims: Claims.valid()))
            #expect(allowed.status == 200, "\(allowed)")
            #expect(upstream.last?.values("x-auth-subject") == ["user-1"])

            let health = try await Self.podman(["healthcheck", "run", name])
            #expect(health.exitCode == 0, "the image's health check: \(health.output)")

            // SIGTERM while a request is in flight (the upstream answers after 2 s): it is answered, then exit 0.
            async let slow = get("/slow", port: port, token: TestSigner.ec.token(claims: Claims.valid()))
            #expect(await Contract.eventually { upstream.requests.contains { $0.uri == "/slow" } })
            let stopped = try await Self.podman(["stop", "--time", "20", name])
            #expect(stopped.exitCode == 0, "\(stopped.output)")
            #expect(try await slow.status == 200, "the request in flight was drained")
            let exit = try await Self.podman(["inspect", "--format", "{{.State.ExitCode}}", name]).output
            let output = await logs()
            #expect(exit.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "exit code \(exit); \(output)")
        } catch {
            Issue.record(error)
        }
        _ = try? await Self.podman(["rm", "--force", name])
        try? FileManager.default.removeItem(atPath: folder)
        try? await client.shutdown()
        await jwks.close()
        await upstream.close()
    }
}
