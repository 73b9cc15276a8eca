import Testing
@testable import Gatehouse
struct Smoke { @Test func v() { #expect(!GatehouseVersion.string.isEmpty) } }
