import Testing
import GatehouseSyntax

/// The one list of hop-by-hop fields (issue 45): every spelling of each, and nothing that merely resembles one.
struct HopByHopFieldsTests {
    @Test func everySpellingOfEachAndNothingElse() {
        for name in ["Connection", "keep-alive", "Keep_Alive", "TE", "Trailer", "TRANSFER_ENCODING", "Upgrade", "Proxy", "proxy-authenticate",
                     "Proxy_Connection", "proxy-"] {
            #expect(HopByHopFields.contains(name.utf8), "\(name)")
        }
        for name in ["Connections", "keep-alive2", "tee", "trailers", "transfer-encodings", "proxyx", "prox", "x-proxy-agent", "Content-Length", ""] {
            #expect(!HopByHopFields.contains(name.utf8), "\(name)")
        }
    }
}
