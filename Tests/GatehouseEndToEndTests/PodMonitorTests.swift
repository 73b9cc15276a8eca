#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import Gatehouse
import Testing

/// `deploy/istio/podmonitor.yaml` as the Prometheus Operator runs it: the scrape it generates for a PodMonitor (job
/// label `<namespace>/<name>`, the endpoint's path, the container port the endpoint names) aimed at Gatehouse started
/// from `deploy/istio/gatehouse.yaml`'s own ConfigMap, in Debian's real Prometheus with deploy/prometheus's rules. The
/// replica is scraped under that job, and once it stops GatehouseDown goes pending for it: the PodMonitor's job label
/// is one the alert selects (there is no Kubernetes here: the Operator's translation is written out, the rest is real).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PodMonitorTests {
    /// What the two manifests say, read by PyYAML: the PodMonitor's namespace, name, selector and endpoint; the
    /// Deployment whose pods the selector selects, the container port its endpoint names; the ConfigMap's gatehouse.toml.
    struct Manifests: Decodable {
        let namespace: String
        let name: String
        let path: String
        let interval: String
        let portName: String
        let containerPort: Int?
        let selectsTheDeployment: Bool
        let configuration: String
    }

    static func manifests() async throws -> Manifests {
        let root = DeployFiles.root
        let script = """
            import json, sys, yaml
            monitor = yaml.safe_load(open(sys.argv[1]))
            documents = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
            deployment = next(d for d in documents if d["kind"] == "Deployment")
            config = next(d for d in documents if d["kind"] == "ConfigMap")
            endpoint = monitor["spec"]["podMetricsEndpoints"][0]
            labels = deployment["spec"]["template"]["metadata"]["labels"]
            wanted = monitor["spec"]["selector"]["matchLabels"]
            ports = [p for c in deployment["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])]
            port = next((p["containerPort"] for p in ports if p.get("name") == endpoint["port"]), None)
            print(json.dumps({"namespace": monitor["metadata"]["namespace"], "name": monitor["metadata"]["name"],
                "path": endpoint.get("path", "/metrics"), "interval": endpoint.get("interval", "30s"), "portName": endpoint["port"],
                "containerPort": port, "selectsTheDeployment": all(labels.get(k) == v for k, v in wanted.items())
                    and monitor["metadata"]["namespace"] == deployment["metadata"]["namespace"],
                "configuration": config["data"]["gatehouse.toml"]}))
            """
        let (code, output) = try await ChildProcess.runToEnd(
            ["/usr/bin/env", "python3", "-c", script, root + "/deploy/istio/podmonitor.yaml", root + "/deploy/istio/gatehouse.yaml"])
        try #require(code == 0, "reading the manifests: \(output)")
        return try JSONDecoder().decode(Manifests.self, from: Data(output.utf8))
    }

    @Test func theOperatorsScrapeOfThePodMonitorFeedsGatehouseDown() async throws {
        let manifests = try await Self.manifests()
        #expect(manifests.selectsTheDeployment, "the PodMonitor's selector does not select the Deployment's pods")
        let containerPort = try #require(manifests.containerPort, "no container port named \(manifests.portName)")
        // The port the endpoint names is the one the ConfigMap's [admin] listens on: the Operator scrapes pod IP:port.
        #expect(manifests.configuration.contains("[admin]\naddress = \"0.0.0.0:\(containerPort)\""), "\(manifests.configuration)")
        let seconds = Int(manifests.interval.dropLast()) ?? 0
        #expect(manifests.interval.hasSuffix("s") && (1...60).contains(seconds), "GatehouseDown's `for: 2m` needs scrapes: \(manifests.interval)")

        // Gatehouse from the ConfigMap as written, its two ports moved to free loopback ones (a pod has 9901 to itself).
        let directory = try Contract.makeDirectory("podmonitor")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let adminPort = try await freeLoopbackPort()
        var authzPort = try await freeLoopbackPort()
        while authzPort == adminPort { authzPort = try await freeLoopbackPort() }
        let configuration = manifests.configuration
            .replacingOccurrences(of: "0.0.0.0:\(containerPort)", with: "127.0.0.1:\(adminPort)")
            .replacingOccurrences(of: "0.0.0.0:9191", with: "127.0.0.1:\(authzPort)")
        try configuration.write(toFile: directory + "/gatehouse.toml", atomically: true, encoding: .utf8)
        let pid = try ChildProcess.spawn([ServedGatehouse.executable, "serve", "--config", directory + "/gatehouse.toml"], outputPath: directory + "/out.log")
        defer { ChildProcess.stop(pid) }
        let serving = await Contract.eventually(timeout: .seconds(20)) { (try? await ServedGatehouse.admin(adminPort, "/healthz").status) == 200 }
        try #require(serving, "gatehouse did not serve: \((try? String(contentsOfFile: directory + "/out.log", encoding: .utf8)) ?? "")")

        // The Operator's scrape of a PodMonitor: job `podMonitor/<ns>/<name>/0`, the job label `<ns>/<name>`, the endpoint's
        // path; every second here, not every 30 s, so the test does not wait a scrape interval.
        let job = "\(manifests.namespace)/\(manifests.name)"
        let scrape = """
              - job_name: podMonitor/\(job)/0
                metrics_path: \(manifests.path)
                static_configs:
                  - targets: ["127.0.0.1:\(adminPort)"]
                relabel_configs:
                  - target_label: job
                    replacement: \(job)
            """
        try await TestPrometheus.with(scraping: adminPort, rules: DeployFiles.rules, scrapeConfigs: scrape) { prometheus in
            let scraped = await Contract.eventually(timeout: .seconds(30)) {
                let up = try? await prometheus.query("up{job=\"\(job)\"}")
                let info = try? await prometheus.query("gatehouse_build_info{job=\"\(job)\"}")
                return (up?.first?["value"] as? [Any])?.last as? String == "1" && info?.count == 1
            }
            let targets = try? await prometheus.query("up")
            #expect(scraped, "Prometheus has no scrape of \(manifests.path) under job \(job): \(String(describing: targets))")

            ChildProcess.stop(pid)
            var rule: [String: Any]?
            let pending = await Contract.eventually(timeout: .seconds(30)) {
                let groups = (try? await prometheus.rules()) ?? []
                rule = groups.flatMap { $0["rules"] as? [[String: Any]] ?? [] }.first { $0["name"] as? String == "GatehouseDown" }
                return TestPrometheus.alertInstances(rule) == ["127.0.0.1:\(adminPort)"]
            }
            #expect(pending, "GatehouseDown does not select the PodMonitor's job: \(String(describing: rule))")
        }
    }
}
