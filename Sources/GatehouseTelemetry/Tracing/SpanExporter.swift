package import AsyncHTTPClient
import Foundation
package import Logging
import NIOConcurrencyHelpers
package import NIOCore
import NIOHTTP1
package import GatehouseConfig

/// Batches finished spans and POSTs them to the collector over OTLP/HTTP (binary protobuf), from the background
/// work, never from a request. Bounded: a dead or slow collector costs at most `max_queue_size` spans of memory;
/// what does not fit, or a batch the collector did not take, is dropped and counted (docs/reference.md §16).
package final class SpanExporter: Sendable {
    package let settings: TracingSettings
    private let client: HTTPClient
    private let metrics: GatehouseMetrics
    private let logger: Logger
    private let queue = NIOLockedValueBox(Pending())
    /// The `Resource` message, encoded once.
    private let resource: [UInt8]
    private let failures = RateLimitedReport()

    package init(settings: TracingSettings, client: HTTPClient, metrics: GatehouseMetrics, logger: Logger) {
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
        self.resource = OTLPTraceEncoding.resource(resource)
    }

    /// Spans waiting for export, already encoded (`OTLPTraceEncoding.spans`), one request's run after another.
    struct Pending {
        var bytes: [UInt8] = []
        /// Where each request's run ends in `bytes`, and how many spans it holds: batches split between runs.
        var runs: [(end: Int, spans: Int)] = []
        var spans = 0
    }

    /// Called on event loops: a lock and an append, or a drop when the queue is full. `encoded`: `count` spans.
    func enqueue(_ encoded: UnsafeBufferPointer<UInt8>, count: Int) {
        let fits: Bool = queue.withLockedValue { queue in
            guard queue.spans + count <= settings.maxQueueSize else { return false }
            queue.bytes.append(contentsOf: encoded)
            queue.runs.append((queue.bytes.count, count))
            queue.spans += count
            return true
        }
        if !fits { metrics.traceSpansDropped(count) }
    }

    package var queued: Int { queue.withLockedValue { $0.spans } }

    /// Exports every `export_interval` (at once again while full batches wait) until cancelled. What is left then is
    /// exported by `Gatehouse.stop()`, once the requests in flight have drained.
    package func run() async {
        while !Task.isCancelled {
            let full = await exportQueued()
            if full { continue }
            try? await Task.sleep(for: settings.exportInterval)
        }
    }

    /// Exports what is queued, about `max_batch_size` spans at a time (batches split between requests); whether more
    /// was queued meanwhile. The queue is taken whole, so a request never waits on an export.
    /// - Parameter deadline: none is started after it, and what is left is dropped (counted): a stop waits for the
    ///   collector once, never once per batch.
    @discardableResult
    package func exportQueued(until deadline: NIODeadline? = nil) async -> Bool {
        let taken: Pending = queue.withLockedValue { queue in
            defer { queue = Pending() }
            return queue
        }
        var start = 0
        var spans = 0
        for (index, run) in taken.runs.enumerated() {
            spans += run.spans
            if spans >= settings.maxBatchSize || index == taken.runs.count - 1 {
                if let deadline, NIODeadline.now() >= deadline {
                    metrics.traceSpansDropped(spans)
                } else {
                    await export(taken.bytes[start..<run.end], spans: spans, until: deadline)
                }
                start = run.end
                spans = 0
            }
        }
        return taken.spans >= settings.maxBatchSize && queued >= settings.maxBatchSize
    }

    private func export(_ batch: ArraySlice<UInt8>, spans: Int, until deadline: NIODeadline? = nil) async {
        var request = HTTPClientRequest(url: settings.endpoint.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-protobuf")
        for (name, value) in settings.headers { request.headers.add(name: name, value: value) }
        let body = OTLPTraceEncoding.request(encodedSpans: batch, resource: resource, scope: "gatehouse", version: GatehouseVersion.string)
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            var timeout = TimeAmount(settings.exportTimeout)
            if let deadline { timeout = min(timeout, max(.zero, deadline - .now())) }
            let response = try await client.execute(request, timeout: timeout)
            _ = try await response.body.collect(upTo: 1 << 20)
            guard (200..<300).contains(response.status.code) else { throw ExportError(status: response.status) }
            metrics.traceSpansExported(spans)
        } catch {
            metrics.traceSpansDropped(spans)
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
