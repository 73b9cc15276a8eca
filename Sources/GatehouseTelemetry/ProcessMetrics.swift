#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The standard `process_*` series (Prometheus's client libraries export them; dashboards and alerts expect them),
/// read from `/proc/self` at each scrape: CPU seconds, resident and virtual memory, open and maximum file
/// descriptors, and the start time.
enum ProcessMetrics {
    struct Reading: Equatable {
        var cpuSeconds: Double
        var residentBytes: Double
        var virtualBytes: Double
        var openDescriptors: Double
        var maxDescriptors: Double
        var startTimeSeconds: Double
    }

    /// The series in the text format, or "" where `/proc` cannot be read (not Linux).
    static func exposition() -> String {
        guard let reading = read() else { return "" }
        let series: [(String, String, String, Double)] = [
            ("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", reading.cpuSeconds),
            ("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", reading.residentBytes),
            ("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", reading.virtualBytes),
            ("process_open_fds", "gauge", "Number of open file descriptors.", reading.openDescriptors),
            ("process_max_fds", "gauge", "Maximum number of open file descriptors.", reading.maxDescriptors),
            ("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", reading.startTimeSeconds),
        ]
        return series.map { name, type, help, value in
            "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(format(value))\n"
        }.joined()
    }

    static func read() -> Reading? {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let fields = statFields(stat), fields.count >= 22
        else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        // After the command's closing parenthesis: field 3 (state) is fields[0], so field n is fields[n - 3].
        guard let utime = Double(fields[11]), let stime = Double(fields[12]), let start = Double(fields[19]),
              let virtual = Double(fields[20]), let rss = Double(fields[21]), ticks > 0
        else { return nil }
        var limit = rlimit()
        let maxDescriptors = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 ? Double(limit.rlim_cur) : -1
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count).map(Double.init) ?? -1
        return Reading(
            cpuSeconds: (utime + stime) / ticks, residentBytes: rss * pageSize, virtualBytes: virtual,
            openDescriptors: open, maxDescriptors: maxDescriptors, startTimeSeconds: bootTime() + start / ticks)
    }

    /// The fields of `/proc/self/stat` after `(comm)`, which may itself hold spaces and parentheses.
    static func statFields(_ stat: String) -> [Substring]? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
    }

    /// The system's boot time (`btime` of `/proc/stat`), in seconds since the epoch.
    private static func bootTime() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("btime ") })
        else { return 0 }
        return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces)) ?? 0
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
