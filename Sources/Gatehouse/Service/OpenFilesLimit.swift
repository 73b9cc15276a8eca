#if canImport(Glibc)
import Glibc
#endif

/// At start, `serve` raises its own soft limit of open files (RLIMIT_NOFILE) to the hard limit, as Go's runtime
/// and nginx (`worker_rlimit_nofile`) do: the soft default (often 1024) is a compatibility setting for `select`,
/// which Gatehouse never uses, and every client and upstream connection costs a descriptor. `process_max_fds`
/// exports the figure.
public enum OpenFilesLimit {
    /// The soft limit before and after (equal when it already was the hard limit, or could not be raised).
    public static func raiseToHard() -> (before: UInt64, after: UInt64) {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (0, 0) }
        let before = UInt64(limit.rlim_cur)
        guard limit.rlim_cur < limit.rlim_max else { return (before, before) }
        var raised = limit
        raised.rlim_cur = limit.rlim_max
        guard setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 else { return (before, before) }
        return (before, UInt64(limit.rlim_max))
    }
}
