import NIOConcurrencyHelpers
package import NIOCore
import GatehouseTelemetry

extension EventLoopFuture where Value == Void {
    /// Waits for the future, but returns at once when the task is cancelled (graceful shutdown must
    /// not wait out a JWKS fetch's timeout). The work behind the future goes on; only the wait ends.
    package func waitUnlessCancelled() async {
        let resumed = NIOLockedValueBox<CheckedContinuation<Void, Never>?>(nil)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                resumed.withLockedValue { $0 = continuation }
                if Task.isCancelled { resumed.withLockedValue { $0.take() }?.resume() }
                self.whenComplete { _ in resumed.withLockedValue { $0.take() }?.resume() }
            }
        } onCancel: {
            resumed.withLockedValue { $0.take() }?.resume()
        }
    }
}

extension Optional {
    /// The value, leaving nil behind: a continuation is resumed exactly once.
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
