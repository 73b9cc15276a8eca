import AsyncHTTPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// Batches finished spans and POSTs them to the collector over OTLP/HTTP (binary protobuf), from the background
/// work, never from a request. Bounded: a dead or slow collector costs at most `max_queue_size` spans of memory;
/// what does not fit, or a batch the collector did not take, is dropped and counted (docs/reference.md §16).
final class SpanExporter: Sendable {
    let settings: TracingSettings
    private let client: HTTPClient
    private let metrics: GatehouseMetrics
    private let logger: Logger
    private let queue = NIOLockedValueBox<[TraceSpan]>([])
    private let resource: [(String, TraceSpan.Value)]
    private let failures = RateLimitedReport()

    init(settings: TracingSettings, client: HTTPClient, metrics: GatehouseMetrics, logger: Logger) {
        self.settings = settings
        self.client = client
        self.metrics = metrics
        self.logger = logger
        var resource: [(String, TraceSpan.Value)] = [
            ("service.name", .string(settings.serviceName)), ("service.version", .string(GatehouseVersion.string)),
            ("telemetry.sdk.name", .string("gatehouse")), ("telemetry.sdk.language", .string("swift")),
        ]
        for (key, value) in settings.resourceAttributes.sorted(by: { $0.key < $1.key }) where key != "service.name" {
            resource.append((key, .string(value)))
        }
        self.resource = resource
    }

    /// Called on event loops: a lock and an append, or a drop when the queue is full.
    func enqueue(_ spans: [TraceSpan]) {
        let dropped: Int = queue.withLockedValue { queue in
            let room = settings.maxQueueSize - queue.count
            guard room < spans.count else {
                queue.append(contentsOf: spans)
                return 0
            }
            if room > 0 { queue.append(contentsOf: spans.prefix(room)) }
            return spans.count - max(0, room)
        }
        if dropped > 0 { metrics.traceSpansDropped(dropped) }
    }

    var queued: Int { queue.withLockedValue { $0.count } }

    /// Exports every `export_interval` (at once again while full batches wait) until cancelled, then once more.
    func run() async {
        while !Task.isCancelled {
            let full = await exportQueued()
            if full { continue }
            try? await Task.sleep(for: settings.exportInterval)
        }
        _ = await exportQueued()
    }

    /// Exports what is queued, a batch at a time; whether more was queued meanwhile (full batches may be waiting).
    /// The queue is taken whole (no shifting of what is left), then sent in `max_batch_size` slices.
    @discardableResult
    func exportQueued() async -> Bool {
        let taken: [TraceSpan] = queue.withLockedValue { queue in
            defer { queue = [] }
            return queue
        }
        var start = 0
        while start < taken.count {
            let end = min(start + settings.maxBatchSize, taken.count)
            await export(taken[start..<end])
            start = end
        }
        return taken.count >= settings.maxBatchSize && queued >= settings.maxBatchSize
    }

    private func export(_ batch: ArraySlice<TraceSpan>) async {
        var request = HTTPClientRequest(url: settings.endpoint.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-protobuf")
        for (name, value) in settings.headers { request.headers.add(name: name, value: value) }
        let body = OTLPTraceEncoding.request(batch, resource: resource, scope: "gatehouse", version: GatehouseVersion.string)
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(request, timeout: TimeAmount(settings.exportTimeout))
            _ = try await response.body.collect(upTo: 1 << 20)
            guard (200..<300).contains(response.status.code) else { throw ExportError(status: response.status) }
            metrics.traceSpansExported(batch.count)
        } catch {
            metrics.traceSpansDropped(batch.count)
            failures.occurred("trace export failed; its spans are dropped", metadata: [
                "gatehouse.tracing.endpoint": "\(settings.endpoint.absoluteString)", "gatehouse.error": "\(error)",
            ], to: logger)
        }
    }

    struct ExportError: Error, CustomStringConvertible {
        let status: HTTPResponseStatus
        var description: String { "the collector answered \(status.code)" }
    }
}
