import Testing

/// Release builds leave out Swift's run-time exclusivity checks (`Package.swift`: 4-6 % of a request's CPU); the
/// builds the suite, the soak and the fuzzers run keep them, so an overlapping access in Gatehouse's code traps there
/// rather than going unseen (docs/security.md P69). This proves the test build is such a build: an overlapping access
/// to a class's property, which only the run-time check can see, ends the process.
struct ExclusivityEnforcementTests {
    final class Counter {
        var value = 0
    }

    static func increment(_ value: inout Int, while action: () -> Void) {
        action()
        value += 1
    }

    @Test func anOverlappingAccessTrapsInTheBuildTheSuiteRuns() async {
        await #expect(processExitsWith: .failure) {
            let counter = Counter()
            Self.increment(&counter.value) { counter.value += 1 }
        }
    }
}
