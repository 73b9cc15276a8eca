import ArgumentParser
import Foundation
import Gatehouse

/// `gatehouse bench-verify`: what verifying a token never seen before costs, per algorithm.
struct BenchVerify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-verify",
        abstract: "Measure strict parse + signature verification per algorithm (RS256, PS256, ES256, EdDSA) on one core.")

    @Option(help: "Seconds per algorithm.") var seconds: Double = 1

    func run() throws {
        print("algorithm\tkey\ttokens/s\tµs/token")
        for measurement in try VerifyBenchmark.run(seconds: seconds) {
            print("\(measurement.algorithm)\t\(measurement.keyType)\t\(Int(measurement.tokensPerSecond))\t"
                + String(format: "%.1f", measurement.microsecondsPerToken))
        }
    }
}
