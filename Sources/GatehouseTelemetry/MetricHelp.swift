import Prometheus

/// The `# HELP` text of each of Gatehouse's series (docs/reference.md §9), and the descriptor a series is made with:
/// the full name as the reference spells it, no namespace or unit added.
enum MetricHelp {
    static func descriptor(_ name: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: texts[name] ?? "")
    }

    private static let texts: [String: String] = [
        "gatehouse_requests_total": "Requests by route auth and outcome",
        "gatehouse_auth_failures_total": "Refusals by reason code and provider",
        "gatehouse_backchannel_logouts_total": "Back-channel logouts by provider and result (applied, or why not)",
        "gatehouse_jwks_fetches_total": "JWKS fetches by provider and result",
        "gatehouse_jwks_keys": "Usable keys in the last fetched key set",
        "gatehouse_jwks_age_seconds": "Seconds since the last successful JWKS fetch (-1: never)",
        "gatehouse_verify_cache_total": "Verified-token cache lookups: hit, miss, rejected",
        "gatehouse_upstream_request_duration_seconds": "From the request head to the end of the upstream's response",
        "gatehouse_auth_duration_seconds": "From the request head to the decision, on non-public routes",
        "gatehouse_accept_errors_total": "Accept failures for want of resources, by listener",
        "gatehouse_introspection_calls_total": "RFC 7662 introspection calls by answer",
        "gatehouse_introspection_cache_total": "Opaque tokens answered from the introspection cache, or not",
        "gatehouse_introspection_duration_seconds": "One introspection call, from the request to the judged answer",
        "gatehouse_dpop_replay_entries": "Live entries of this replica's DPoP jti cache",
        "gatehouse_failure_log_write_errors_total": "Failure-log lines not written whole",
        "gatehouse_config_last_reload_successful": "1 while the last configuration load (start, or SIGHUP) succeeded, 0 after a refused reload",
        "gatehouse_config_last_reload_success_timestamp_seconds": "when the running configuration was loaded, in seconds since the epoch",
        "gatehouse_build_info": "always 1; its labels name the version and the commit this binary was built from",
        "gatehouse_ready": "1 while /readyz answers 200 (keys usable, revocation store read once), else 0",
        "gatehouse_revocation_store_up": "1 while the revocation store is connected (memory: always), else 0",
        "gatehouse_revocation_store_unsaved": "Sign-outs applied here that the revocation store has not taken yet",
        "gatehouse_http2_streams_total": "HTTP/2 streams opened on the client port",
        "gatehouse_trace_spans_exported_total": "Spans the OTLP collector accepted",
        "gatehouse_trace_spans_dropped_total": "Spans dropped: the export queue was full, or the collector did not take them",
        "gatehouse_assertion_signatures_total": "Identity assertions signed, by result (kept ones are not counted again)",
    ]
}
