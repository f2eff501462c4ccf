package io.sluice.rls;

import com.google.protobuf.Duration;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.sluice.rls.config.LimitSpec;
import io.sluice.rls.config.RateLimitConfig.Entry;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/** Proto ↔ domain mapping for the RLS adapter (one method per direction). */
public final class RlsProtoMapper {
  private RlsProtoMapper() {}

  public static RlsRequest toRequest(RateLimitRequest proto) {
    int n = proto.getDescriptorsCount();
    List<RlsRequest.Descriptor> descriptors = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      RateLimitDescriptor d = proto.getDescriptors(i);
      int m = d.getEntriesCount();
      List<Entry> entries = new ArrayList<>(m);
      for (int j = 0; j < m; j++) {
        RateLimitDescriptor.Entry e = d.getEntries(j);
        entries.add(new Entry(e.getKey(), e.getValue()));
      }
      Optional<RlsRequest.LimitOverride> override =
          d.hasLimit()
              ? Optional.of(
                  new RlsRequest.LimitOverride(
                      d.getLimit().getUnitValue(),
                      Integer.toUnsignedLong(d.getLimit().getRequestsPerUnit())))
              : Optional.empty();
      OptionalLong hits =
          d.hasHitsAddend() ? OptionalLong.of(d.getHitsAddend().getValue()) : OptionalLong.empty();
      descriptors.add(new RlsRequest.Descriptor(entries, override, hits));
    }
    return new RlsRequest(
        proto.getDomain(), descriptors, Integer.toUnsignedLong(proto.getHitsAddend()));
  }

  /** The request as protobuf-java's message (clients and tests; the inverse of toRequest). */
  public static RateLimitRequest toProto(RlsRequest r) {
    RateLimitRequest.Builder b =
        RateLimitRequest.newBuilder().setDomain(r.domain()).setHitsAddend((int) r.hitsAddend());
    for (RlsRequest.Descriptor d : r.descriptors()) {
      RateLimitDescriptor.Builder db = RateLimitDescriptor.newBuilder();
      for (Entry e : d.entries()) {
        db.addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(e.key()).setValue(e.value()));
      }
      d.limitOverride()
          .ifPresent(
              o ->
                  db.setLimit(
                      RateLimitDescriptor.RateLimitOverride.newBuilder()
                          .setUnitValue(o.unitNumber())
                          .setRequestsPerUnit((int) o.requestsPerUnit())));
      d.hitsAddend().ifPresent(h -> db.setHitsAddend(com.google.protobuf.UInt64Value.of(h)));
      b.addDescriptors(db);
    }
    return b.build();
  }

  public static RateLimitResponse toResponse(RlsDecision.Decided decision) {
    RateLimitResponse.Builder b =
        RateLimitResponse.newBuilder().setOverallCode(code(decision.overall()));
    for (RlsDecision.Status s : decision.statuses()) {
      RateLimitResponse.DescriptorStatus.Builder sb =
          RateLimitResponse.DescriptorStatus.newBuilder()
              .setCode(code(s.code()))
              .setLimitRemaining((int) Math.min(s.limitRemaining(), 0xFFFF_FFFFL));
      LimitSpec l = s.currentLimit();
      if (l != null) {
        sb.setCurrentLimit(
            RateLimitResponse.RateLimit.newBuilder()
                .setName(l.name())
                .setRequestsPerUnit((int) l.requestsPerUnit())
                .setUnitValue(java.util.Objects.requireNonNull(l.unit()).protoNumber()));
      }
      if (s.resetSeconds() >= 0) {
        sb.setDurationUntilReset(Duration.newBuilder().setSeconds(s.resetSeconds()));
      }
      b.addStatuses(sb);
    }
    for (RlsDecision.Header h : decision.headers()) {
      b.addResponseHeadersToAdd(HeaderValue.newBuilder().setKey(h.name()).setValue(h.value()));
    }
    return b.build();
  }

  private static RateLimitResponse.Code code(RlsDecision.Code c) {
    return c == RlsDecision.Code.OK ? RateLimitResponse.Code.OK : RateLimitResponse.Code.OVER_LIMIT;
  }
}
