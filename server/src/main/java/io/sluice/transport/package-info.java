/**
 * Guards on the gRPC port's bytes below grpc-java's HTTP/2 codec: {@link
 * io.sluice.transport.PrematureResetGuard} counts streams a client resets before they carried a
 * message, reading only frame headers, and closes the connection before grpc decodes the rest of
 * the read; {@link io.sluice.transport.GuardedNegotiation} installs it in front of grpc's handler
 * through grpc-netty's {@code Internal*} negotiator API. Plain Netty (grpc's shaded copy), no other
 * Sluice package.
 */
@NullMarked
package io.sluice.transport;

import org.jspecify.annotations.NullMarked;
