import ArgumentParser
import Foundation
import Gatehouse
import GatehouseDemo

/// `gatehouse bench-verify`: what verifying a token never seen before costs, per algorithm.
struct BenchVerify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-verify",
        abstract: "Measure strict parse + signature verification per algorithm (RS256, PS256, ES256, EdDSA) on one core.")

    @Option(help: "Seconds per algorithm.") var seconds: Double = 1
    @Option(help: "Also measure a DPoP proof check, and the replay cache at this many proofs/s over a 120 s window (0: skip).")
    var dpopRate = 0
    @Option(help: "Also measure the introspection cache's memory with this many cached answers (0: skip).")
    var introspectionEntries = 0
    @Option(help: "Measure only this route rule (CEL), evaluated over bench/routes.sh's claims, instead of the algorithms.")
    var rule: String?

    func run() throws {
        if let rule {
            let measurement = try RuleBenchmark.evaluation(rule: rule, seconds: seconds)
            print("rule\tevaluations/s\tns/evaluation\tresult")
            print("\(rule)\t\(Int(measurement.evaluationsPerSecond))\t" + String(format: "%.0f", measurement.nanosecondsPerEvaluation) + "\t\(measurement.result)")
            return
        }
        print("algorithm\tkey\ttokens/s\tµs/token")
        var measurements = try VerifyBenchmark.run(seconds: seconds)
        if dpopRate > 0 { measurements.append(try DPoPBenchmark.proofVerification(seconds: seconds)) }
        for measurement in measurements {
            print("\(measurement.algorithm)\t\(measurement.keyType)\t\(Int(measurement.tokensPerSecond))\t"
                + String(format: "%.1f", measurement.microsecondsPerToken))
        }
        if introspectionEntries > 0 {
            let footprint = IntrospectionBenchmark.cacheFootprint(entries: introspectionEntries)
            print("# introspection cache: \(footprint.entries) entries, "
                + String(format: "%.1f MiB, %.0f bytes/entry", Double(footprint.residentBytes) / 1_048_576,
                         Double(footprint.residentBytes) / Double(max(1, footprint.entries))))
        }
        guard dpopRate > 0 else { return }
        // proof_lifetime 60 s + leeway 60 s (the defaults): a proof with iat = now is kept 120 s.
        let footprint = DPoPBenchmark.replayFootprint(proofsPerSecond: dpopRate, window: 120)
        print("# dpop replay cache at \(dpopRate) proofs/s, 120 s window: \(footprint.entries) entries, "
            + String(format: "%.1f MiB, %.0f bytes/entry", Double(footprint.residentBytes) / 1_048_576,
                     Double(footprint.residentBytes) / Double(max(1, footprint.entries))))
    }
}
