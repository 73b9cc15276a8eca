import Testing
import GatehouseSyntax

/// A `Content-Type` value's essence, as the MCP intake, the sign-out and the back-channel logout endpoints read it.
struct MediaTypeTests {
    @Test(arguments: [
        ("application/json", true), ("Application/JSON", true), ("application/json; charset=utf-8", true),
        ("application/json ;charset=utf-8", true), (" application/json\t", true), ("application/jsonx", false),
        ("application/json-seq", false), ("text/json", false), ("application/jso", false), ("", false), (";", false),
        ("application/x-json", false), (";application/json", false),
    ])
    func theEssenceBeforeItsParametersInAnyCase(value: String, isJSON: Bool) {
        #expect(MediaType.hasEssence(value, "application/json") == isJSON)
    }

    @Test func formEncodingAsTheLogoutAndSignOutEndpointsAskForIt() {
        #expect(MediaType.hasEssence("application/x-www-form-urlencoded; charset=UTF-8", "application/x-www-form-urlencoded"))
        #expect(!MediaType.hasEssence("multipart/form-data; boundary=x", "application/x-www-form-urlencoded"))
    }
}
