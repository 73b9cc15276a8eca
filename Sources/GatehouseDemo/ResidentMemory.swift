import Foundation

/// This process's resident memory (`VmRSS`), for the footprint figures of `gatehouse bench-verify`.
enum ResidentMemory {
    static func bytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kib * 1024
    }
}
