import Foundation

/// How many CPUs this process may run on: one event loop each. `taskset` and cgroup cpusets
/// narrow the affinity mask, which `System.coreCount` does not look at; two loops on one CPU only
/// add context switches. Read from `Cpus_allowed` in /proc/self/status on Linux.
enum AvailableCores {
    static func count() -> Int {
        let online = ProcessInfo.processInfo.activeProcessorCount
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed:") })
        else { return online }
        let mask = line.dropFirst("Cpus_allowed:".count).filter { $0.isHexDigit }
        let allowed = mask.reduce(0) { $0 + (Int(String($1), radix: 16) ?? 0).nonzeroBitCount }
        return allowed > 0 ? min(allowed, online) : online
    }
}
