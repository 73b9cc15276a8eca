import CGatehouseBuildInfo

public enum GatehouseVersion {
    public static let string = "0.1.0"
    /// The commit this binary was built from (`GATEHOUSE_REVISION` at build time, else the checkout's), or "unknown".
    public static let revision = String(cString: gatehouse_build_revision())
    /// What `gatehouse --version` prints: `0.1.0 (<revision>)`.
    public static var description: String { "\(string) (\(revision))" }
}
