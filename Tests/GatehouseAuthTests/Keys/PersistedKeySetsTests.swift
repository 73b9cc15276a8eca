import Foundation
import Testing
@testable import GatehouseAuth

struct PersistedKeySetsTests {
    @Test func savedSetLoadsBackWithItsFetchTime() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-persist-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = PersistedKeySets(directory: directory)
        let body = Array("{\"keys\":[]}".utf8)
        try store.save(provider: "google", body: body, fetchedAt: Date(timeIntervalSince1970: 1_800_000_000))
        let loaded = try #require(store.load(provider: "google"))
        #expect(loaded.body == body)
        #expect(loaded.fetchedAt == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(store.load(provider: "apple") == nil)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(leftovers == ["google.jwks"])
    }

    @Test func fileWithoutTheHeaderIsIgnored() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-persist-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "{\"keys\":[]}".write(toFile: directory + "/google.jwks", atomically: true, encoding: .utf8)
        #expect(PersistedKeySets(directory: directory).load(provider: "google") == nil)
    }
}
