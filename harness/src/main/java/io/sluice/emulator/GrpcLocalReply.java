package io.sluice.emulator;

import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.sluice.upstream.HttpHeaders;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * Envoy's local reply to a gRPC request ({@code Http::Utility::sendLocalReply} with {@code
 * is_grpc}): trailers-only, {@code :status 200}, {@code content-type: application/grpc}, {@code
 * grpc-status} (an ImmediateResponse's {@code grpc_status}, else {@code
 * Grpc::Utility::httpToGrpcStatus} of its HTTP status) and its body as {@code grpc-message}; no
 * body. The ImmediateResponse's headers are applied after, as on any local reply.
 */
final class GrpcLocalReply {
  private GrpcLocalReply() {}

  /** Whether Envoy treats {@code request} as gRPC ({@code content-type: application/grpc...}). */
  static boolean isGrpc(HttpRequest request) {
    return request
        .headers()
        .first("content-type")
        .map(c -> c.toLowerCase(Locale.ROOT).startsWith("application/grpc"))
        .orElse(false);
  }

  static HttpHeaders headers(ImmediateResponse immediate, int httpStatus, byte[] body) {
    HttpHeaders h = new HttpHeaders();
    h.add(":status", "200");
    h.add("content-type", "application/grpc");
    int grpc =
        immediate.hasGrpcStatus() ? immediate.getGrpcStatus().getStatus() : grpcOf(httpStatus);
    h.add("grpc-status", Integer.toString(grpc));
    if (body.length > 0) {
      h.add("grpc-message", percentEncoded(body));
    }
    return h;
  }

  /** {@code Grpc::Utility::httpToGrpcStatus}. */
  static int grpcOf(int httpStatus) {
    return switch (httpStatus) {
      case 400 -> 13; // INTERNAL
      case 401 -> 16; // UNAUTHENTICATED
      case 403 -> 7; // PERMISSION_DENIED
      case 404 -> 12; // UNIMPLEMENTED
      case 429, 502, 503, 504 -> 14; // UNAVAILABLE
      default -> 2; // UNKNOWN
    };
  }

  /** gRPC's percent-encoding of {@code grpc-message}: printable ASCII but '%' kept. */
  private static String percentEncoded(byte[] utf8) {
    StringBuilder m = new StringBuilder();
    for (byte b : new String(utf8, StandardCharsets.UTF_8).getBytes(StandardCharsets.UTF_8)) {
      if (b >= 0x20 && b <= 0x7e && b != '%') {
        m.append((char) b);
      } else {
        m.append('%').append(String.format(Locale.ROOT, "%02X", b & 0xff));
      }
    }
    return m.toString();
  }
}
