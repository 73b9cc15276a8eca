import Testing
import NIOHTTP1
@testable import GatehouseExchange

/// Which POSTs to an MCP server carry a message (docs/reference.md §17.3): `Content-Type: application/json`, any case,
/// any parameters, nothing else.
struct MCPMessageIntakeTests {
    @Test(arguments: [
        ("application/json", true), ("Application/JSON", true), ("application/json; charset=utf-8", true),
        ("application/json ;charset=utf-8", true), ("application/json\t", true), ("application/jsonx", false),
        ("application/json-seq", false), ("text/json", false), ("application/jso", false), ("", false), (";", false),
    ])
    func theOneMediaTypeOfAMessage(value: String, isJSON: Bool) {
        #expect(MCPMessageIntake.isJSON(HTTPHeaders([("Content-Type", value)])) == isJSON)
    }

    @Test func aPostWithoutAContentTypeCarriesNoMessage() {
        #expect(!MCPMessageIntake.isJSON(HTTPHeaders([("Content-Length", "2")])))
    }
}
