import Foundation
import Testing

/// Every Pod template under deploy/ passes the Pod Security Standards' "restricted" profile (issue 43), as the
/// PodSecurity admission controller judges it (deploy/pod-security.py); the checker refuses what that profile refuses.
struct PodSecurityTests {
    static let checker = ProxyExampleBlocksTests.repository.appendingPathComponent("deploy/pod-security.py").path

    static func check(_ files: [String]) async throws -> (exitCode: Int32, output: String) {
        try await ChildProcess.runToEnd(["/usr/bin/env", "python3", checker] + files)
    }

    @Test func everyPodTemplateInDeployIsRestricted() async throws {
        let root = ProxyExampleBlocksTests.repository.path
        let manifests = try FileManager.default.subpathsOfDirectory(atPath: root + "/deploy")
            .filter { $0.hasSuffix(".yaml") }.map { root + "/deploy/" + $0 }
            .filter { (try? String(contentsOfFile: $0, encoding: .utf8))?.contains("containers:") == true }
        #expect(manifests.count >= 5, "\(manifests)")
        let result = try await Self.check(manifests)
        #expect(result.exitCode == 0, "\(result.output)")
        #expect(result.output.split(separator: "\n").filter { $0.hasPrefix("ok ") }.count >= 5, "\(result.output)")
    }

    @Test func theCheckerRefusesWhatRestrictedRefuses() async throws {
        let manifest = NSTemporaryDirectory() + "gatehouse-pss-\(UUID().uuidString).yaml"
        defer { try? FileManager.default.removeItem(atPath: manifest) }
        try """
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: loose}
            spec:
              selector: {matchLabels: {app: loose}}
              template:
                metadata: {labels: {app: loose}}
                spec:
                  hostNetwork: true
                  containers:
                    - name: gatehouse
                      image: example.com/gatehouse:0.1.0
                      securityContext: {capabilities: {add: ["NET_ADMIN"]}}
                  volumes:
                    - {name: host, hostPath: {path: /}}
            """.write(toFile: manifest, atomically: true, encoding: .utf8)
        let result = try await Self.check([manifest])
        #expect(result.exitCode == 1)
        for expected in ["hostNetwork", "hostPath", "allowPrivilegeEscalation", "runAsNonRoot", "seccompProfile", "drop must include ALL",
                         "NET_ADMIN", "readOnlyRootFilesystem"] {
            #expect(result.output.contains(expected), "\(expected): \(result.output)")
        }
    }
}
