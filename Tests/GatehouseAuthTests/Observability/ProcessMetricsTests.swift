import Testing
@testable import GatehouseTelemetry

struct ProcessStatFieldsTests {
    /// The command name may hold spaces and parentheses: fields are counted from the last ')'.
    @Test func fieldsAreCountedFromTheLastParenthesis() throws {
        let fields = try #require(ProcessMetrics.statFields("42 (gate) (house x) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 777 123456 789"))
        #expect(fields[0] == "S" && fields[11] == "250" && fields[12] == "50" && fields[19] == "777" && fields[20] == "123456" && fields[21] == "789")
        #expect(ProcessMetrics.statFields("no parenthesis") == nil)
    }

    @Test func thisProcessCanBeRead() throws {
        let reading = try #require(ProcessMetrics.read())
        #expect(reading.residentBytes > 0 && reading.openDescriptors > 0 && reading.maxDescriptors > 0 && reading.startTimeSeconds > 1_700_000_000)
    }
}
