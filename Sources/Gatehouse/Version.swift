public enum GatehouseVersion { public static let string = "0.1.0" }
