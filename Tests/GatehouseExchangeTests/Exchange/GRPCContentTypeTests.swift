import NIOHTTP1
import Testing
import GatehouseExchange

/// Which requests are gRPC calls (answered in gRPC's trailers-only form when refused): `application/grpc`, alone or
/// with a `+format` or parameters, in any case; nothing else.
struct GRPCContentTypeTests {
    @Test(arguments: ["application/grpc", "application/grpc+proto", "application/grpc+json", "APPLICATION/GRPC",
                      "Application/Grpc+Proto", "application/grpc;charset=utf-8"])
    func aGRPCContentTypeMakesAGRPCCall(_ type: String) {
        #expect(GRPCRefusal.isGRPC(HTTPHeaders([("Content-Type", type)])))
    }

    @Test(arguments: ["", "application/json", "application/grpc-web", "application/grpcx", "application/grp", "text/grpc",
                      " application/grpc", "application/grpc-web+proto"])
    func anyOtherIsNot(_ type: String) {
        #expect(!GRPCRefusal.isGRPC(HTTPHeaders([("Content-Type", type)])))
    }

    @Test func noContentTypeIsNot() {
        #expect(!GRPCRefusal.isGRPC(HTTPHeaders([("Accept", "application/grpc")])))
    }
}
