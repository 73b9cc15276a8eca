import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOPosix
public import GatehouseConfig
import GatehouseTokens
import GatehouseAuth

/// `gatehouse health`: asks a running Gatehouse's admin port (`/healthz`, or `/readyz`) from the same host or
/// container, for an image's HEALTHCHECK or an exec probe where the image has no shell and no curl.
public enum HealthProbe {
    /// What the admin port answered: its status, or why there was no answer.
    public enum Outcome: Sendable, Equatable {
        case answered(status: Int)
        case unreachable(String)
    }

    /// The admin address as a client on this host reaches it: a wildcard listen address is asked on loopback.
    public static func url(admin: SocketAddressSetting, path: String) -> String {
        let host = switch admin.host {
        case "0.0.0.0", "": "127.0.0.1"
        case "::", "[::]": "[::1]"
        case let host where host.contains(":"): "[\(host)]"
        case let host: host
        }
        return "http://\(host):\(admin.port)\(path)"
    }

    public static func ask(_ url: String, timeout: Duration) async -> Outcome {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.timeout = .init(connect: TimeAmount(timeout), read: TimeAmount(timeout))
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
        let outcome: Outcome
        do {
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: TimeAmount(timeout))
            outcome = .answered(status: Int(response.status.code))
        } catch {
            outcome = .unreachable("\(error)")
        }
        try? await client.shutdown()
        return outcome
    }
}
