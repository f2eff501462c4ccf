package io.sluice.extproc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.sluice.config.SluiceConfig;
import io.sluice.testing.Seeded;
import io.sluice.testing.Seeded.Gen;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The common admit written in one pass ({@link AdmitAnswer}) against the general encoder it
 * replaces on that path (byte for byte) and against protobuf-java (the message built with its
 * builders): every config, tenant (ASCII or not, long or empty), estimate, time left and extra.
 */
class AdmitAnswerTest {
  private static final AnswerEncoder.Entries ENTRIES = new AnswerEncoder.Entries();

  /** An extra metadata entry after the deadline's: a string or a number. */
  record Extra(String key, @Nullable String text, double number) {}

  record Case(
      SluiceConfig.Responses cfg,
      boolean atBody,
      boolean clearRouteCache,
      @Nullable String tenant,
      String tier,
      String cls,
      String pool,
      String route,
      boolean degraded,
      boolean estimated,
      long in,
      long out,
      long work,
      long left,
      double epochMillis,
      List<Extra> more) {}

  @Test
  void commonAdmitIsTheGeneralEncodersAnswerByteForByte() {
    Seeded.forAll(
        0x5EED_0A01L,
        2_000,
        AdmitAnswerTest::anyCase,
        c -> {
          byte[] written = write(c);
          assertThat(written).isEqualTo(general(c));
          assertThat(ProcessingResponse.parseFrom(written)).isEqualTo(reference(c));
        });
  }

  @Test
  void longNamesAndValuesNeedMultiByteLengths() throws Exception {
    Case c =
        new Case(
            new SluiceConfig.Responses(true, true, "x-" + "d".repeat(200), true),
            true,
            true,
            "t".repeat(300) + "é€😀",
            "gold",
            "chat",
            "default",
            "r".repeat(200),
            true,
            true,
            Long.MAX_VALUE,
            Long.MIN_VALUE,
            -1,
            Long.MAX_VALUE,
            1.7e12,
            List.of(new Extra("engine_priority", "p".repeat(500), 0)));
    byte[] written = write(c);
    assertThat(written).isEqualTo(general(c));
    assertThat(ProcessingResponse.parseFrom(written)).isEqualTo(reference(c));
  }

  /**
   * Answers in a row as streams get them (the last one's bytes are reused or written over): each
   * step the same answer again, the numbers changed (mostly as many digits), or one value of its
   * layout changed; every answer is the general encoder's, and no answer changes once handed out.
   */
  @Test
  void answersInARowAreTheGeneralEncodersAnswersByteForByte() {
    Seeded.forAll(
        0x5EED_0A02L,
        400,
        AdmitAnswerTest::inARow,
        cases -> {
          List<byte[]> written = new ArrayList<>();
          for (Case c : cases) {
            byte[] b = write(c);
            assertThat(b).isEqualTo(general(c));
            written.add(b);
          }
          for (int i = 0; i < cases.size(); i++) {
            assertThat(written.get(i)).isEqualTo(general(cases.get(i)));
          }
        });
  }

  @Test
  void theSameValuesAgainShareOneArrayAndOthersGetTheirOwn() {
    Case c =
        new Case(
            SluiceConfig.Responses.DEFAULTS,
            false,
            false,
            "tenant-0042",
            "standard",
            "interactive",
            "default",
            "chat",
            false,
            true,
            412,
            1024,
            1436,
            29_873,
            1.7e12 + 29_873,
            List.of());
    byte[] first = write(c);
    assertThat(write(c)).isSameAs(first);
    Case later = withNumbers(c, 413, 1025, 1437, 29_872, 1.7e12 + 29_873);
    byte[] patched = write(later);
    assertThat(patched).isNotSameAs(first).isEqualTo(general(later));
    assertThat(first).isEqualTo(general(c));
    assertThat(write(later)).isSameAs(patched);
  }

  private static byte[] write(Case c) {
    return AdmitAnswer.encode(
        AdmitHeaders.of(c.cfg()),
        c.atBody(),
        c.clearRouteCache(),
        ENTRIES.route(c.tier(), c.cls(), c.pool(), c.route()),
        c.tenant(),
        c.degraded(),
        c.estimated(),
        c.in(),
        c.out(),
        c.work(),
        c.left(),
        c.epochMillis(),
        more(c));
  }

  /** The same answer through the general encoder (what the common admit wrote before). */
  private static byte[] general(Case c) {
    AdmitHeaders h = AdmitHeaders.of(c.cfg());
    byte[] deadline =
        AnswerEncoder.numberEntries(
            "deadline_remaining_ms", c.left(), "deadline_epoch_ms", c.epochMillis());
    byte[] more = more(c);
    byte[] extra = java.util.Arrays.copyOf(deadline, deadline.length + more.length);
    System.arraycopy(more, 0, extra, deadline.length, more.length);
    return AnswerEncoder.admit(
        ENTRIES,
        c.atBody(),
        h.keys(c.estimated()),
        h.values(c.degraded(), c.estimated(), c.in(), c.out(), c.work(), c.left()),
        null,
        c.clearRouteCache(),
        new AnswerEncoder.DecisionFields(
            true,
            c.tenant(),
            c.tier(),
            c.cls(),
            c.pool(),
            c.route(),
            c.degraded() ? "degrade" : "admit",
            c.degraded() ? "degraded" : "admitted",
            c.estimated(),
            c.in(),
            c.out(),
            c.work(),
            null,
            null,
            extra));
  }

  /** The same answer built with protobuf-java. */
  private static ProcessingResponse reference(Case c) {
    HeaderMutation.Builder hm = HeaderMutation.newBuilder();
    if (c.cfg().decisionHeader()) {
      hm.addSetHeaders(header("x-sluice-decision", c.degraded() ? "degrade" : "admit"));
    }
    if (c.cfg().estimateHeader() && c.estimated()) {
      hm.addSetHeaders(
          header(
              "x-sluice-estimate", "input=" + c.in() + ";output=" + c.out() + ";work=" + c.work()));
    }
    if (!c.cfg().deadlineHeader().isEmpty()) {
      hm.addSetHeaders(header(c.cfg().deadlineHeader(), Long.toString(c.left())));
    }
    if (c.cfg().upstreamTimeout()) {
      hm.addSetHeaders(header("x-envoy-upstream-rq-timeout-ms", Long.toString(c.left())));
    }
    CommonResponse.Builder common = CommonResponse.newBuilder();
    if (hm.getSetHeadersCount() > 0) {
      common.setHeaderMutation(hm);
    }
    common.setClearRouteCache(c.clearRouteCache());
    Struct.Builder f = Struct.newBuilder();
    f.putFields("tenant", str(c.tenant()));
    f.putFields("tier", str(c.tier()));
    f.putFields("class", str(c.cls()));
    f.putFields("pool", str(c.pool()));
    f.putFields("route", str(c.route()));
    f.putFields("decision", str(c.degraded() ? "degrade" : "admit"));
    f.putFields("reason", str(c.degraded() ? "degraded" : "admitted"));
    if (c.estimated()) {
      f.putFields("est_input_tokens", num(c.in()));
      f.putFields("est_output_tokens", num(c.out()));
      f.putFields("work_units", num(c.work()));
    }
    f.putFields("deadline_remaining_ms", num(c.left()));
    f.putFields("deadline_epoch_ms", num(c.epochMillis()));
    for (Extra e : c.more()) {
      f.putFields(e.key(), e.text() != null ? str(e.text()) : num(e.number()));
    }
    ProcessingResponse.Builder b =
        ProcessingResponse.newBuilder()
            .setDynamicMetadata(
                Struct.newBuilder()
                    .putFields("sluice", Value.newBuilder().setStructValue(f).build()));
    if (c.atBody()) {
      b.setRequestBody(BodyResponse.newBuilder().setResponse(common));
    } else {
      b.setRequestHeaders(HeadersResponse.newBuilder().setResponse(common));
    }
    return b.build();
  }

  private static byte[] more(Case c) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (Extra e : c.more()) {
      out.writeBytes(
          e.text() != null
              ? AnswerEncoder.stringEntry(e.key(), e.text())
              : AnswerEncoder.numberEntry(e.key(), e.number()));
    }
    return out.toByteArray();
  }

  /** A case, then up to 30 more in a row, each a step from the one before. */
  private static List<Case> inARow(Gen g) {
    List<Case> cases = new ArrayList<>();
    Case c = anyCase(g);
    cases.add(c);
    int n = g.intBetween(1, 30);
    for (int i = 0; i < n; i++) {
      c = step(g, c);
      cases.add(c);
    }
    return cases;
  }

  private static Case step(Gen g, Case c) {
    return switch (g.intBetween(0, 12)) {
      case 0 -> c; // the same answer again
      case 1 ->
          withLayout(c, c.atBody(), c.clearRouteCache(), c.tenant() + "x", c.tier(), c.degraded());
      case 2 -> withLayout(c, c.atBody(), c.clearRouteCache(), null, c.tier(), c.degraded());
      case 3 -> withLayout(c, !c.atBody(), c.clearRouteCache(), c.tenant(), c.tier(), c.degraded());
      case 4 -> withLayout(c, c.atBody(), !c.clearRouteCache(), c.tenant(), c.tier(), c.degraded());
      case 5 ->
          withLayout(c, c.atBody(), c.clearRouteCache(), c.tenant(), c.tier() + "-x", c.degraded());
      case 6 -> withLayout(c, c.atBody(), c.clearRouteCache(), c.tenant(), c.tier(), !c.degraded());
      case 7 -> {
        boolean estimated = !c.estimated();
        long in = estimated ? number(g) : 0;
        yield new Case(
            c.cfg(),
            c.atBody(),
            c.clearRouteCache(),
            c.tenant(),
            c.tier(),
            c.cls(),
            c.pool(),
            c.route(),
            c.degraded(),
            estimated,
            in,
            in,
            in,
            c.left(),
            c.epochMillis(),
            g.chance(0.3) ? List.of(new Extra("queue_wait_ms", null, 12)) : List.of());
      }
      case 8, 9 -> oneNumber(g, c);
      default -> // the numbers, mostly with as many digits (sometimes more or fewer)
          withNumbers(
              c,
              c.estimated() ? like(g, c.in()) : 0,
              c.estimated() ? like(g, c.out()) : 0,
              c.estimated() ? like(g, c.work()) : 0,
              like(g, c.left()),
              g.bool() ? c.epochMillis() : g.anyLong());
    };
  }

  /** One of the five numbers changed, the others kept (an estimate's only when estimated). */
  private static Case oneNumber(Gen g, Case c) {
    long in = c.in();
    long out = c.out();
    long work = c.work();
    long left = c.left();
    double epoch = c.epochMillis();
    switch (g.intBetween(c.estimated() ? 0 : 3, 4)) {
      case 0 -> in = like(g, in);
      case 1 -> out = like(g, out);
      case 2 -> work = like(g, work);
      case 3 -> left = like(g, left);
      default -> epoch = epoch + g.intBetween(1, 1000);
    }
    return withNumbers(c, in, out, work, left, epoch);
  }

  /** Any other number of as many digits as {@code v}, or {@code v}, or any number at all. */
  private static long like(Gen g, long v) {
    if (g.chance(0.2) || v == Long.MIN_VALUE) {
      return g.chance(0.5) ? v : g.anyLong();
    }
    long m = Math.abs(v);
    int digits = io.sluice.wire.ProtoWriter.decimalSize(m);
    long lo = digits == 1 ? 0 : (long) Math.pow(10, digits - 1);
    long hi = digits >= 19 ? Long.MAX_VALUE : (long) Math.pow(10, digits) - 1;
    long r = g.longBetween(lo, hi);
    return v < 0 ? -r : r;
  }

  private static Case withLayout(
      Case c,
      boolean atBody,
      boolean clear,
      @Nullable String tenant,
      String tier,
      boolean degraded) {
    return new Case(
        c.cfg(),
        atBody,
        clear,
        tenant,
        tier,
        c.cls(),
        c.pool(),
        c.route(),
        degraded,
        c.estimated(),
        c.in(),
        c.out(),
        c.work(),
        c.left(),
        c.epochMillis(),
        List.of());
  }

  private static Case withNumbers(Case c, long in, long out, long work, long left, double epoch) {
    return new Case(
        c.cfg(),
        c.atBody(),
        c.clearRouteCache(),
        c.tenant(),
        c.tier(),
        c.cls(),
        c.pool(),
        c.route(),
        c.degraded(),
        c.estimated(),
        in,
        out,
        work,
        left,
        epoch,
        List.of());
  }

  private static final String[] NAMES = {"", "default", "chat", "gold", "interactive"};
  private static final String[] EXTRA_KEYS = {
    "queue_wait_ms", "degraded", "degrade_trigger", "rerouted_to", "engine_priority"
  };

  private static Case anyCase(Gen g) {
    int bits = g.intBetween(0, 15);
    SluiceConfig.Responses cfg =
        new SluiceConfig.Responses(
            (bits & 1) != 0,
            (bits & 2) != 0,
            (bits & 4) == 0 ? "" : g.oneOf("x-sluice-deadline-ms", "x-request-deadline-ms"),
            (bits & 8) != 0);
    List<Extra> more = new ArrayList<>();
    for (String key : EXTRA_KEYS) {
      if (g.chance(0.2)) {
        more.add(
            g.bool()
                ? new Extra(key, g.textWithoutSurrogates(40), 0)
                : new Extra(key, null, g.longBetween(1, 1L << 40)));
      }
    }
    boolean estimated = g.bool();
    return new Case(
        cfg,
        g.bool(),
        g.chance(0.2),
        g.frequency(
            java.util.Map.entry(1, () -> null),
            java.util.Map.entry(6, () -> g.string("abcdefghij-_.0123456789", 0, 40)),
            // Latin-1 beyond ASCII: one char each, but two bytes in UTF-8
            java.util.Map.entry(2, () -> g.string("ab-\u0080\u00e9\u00ff", 0, 20)),
            java.util.Map.entry(3, () -> g.textWithoutSurrogates(200))),
        g.oneOf(NAMES),
        g.oneOf(NAMES),
        g.oneOf(NAMES),
        g.oneOf(g.textWithoutSurrogates(150), "chat-route"),
        g.bool(),
        estimated,
        estimated ? number(g) : 0,
        estimated ? number(g) : 0,
        estimated ? number(g) : 0,
        left(g),
        g.bool() ? g.longBetween(1_600_000_000_000L, 2_000_000_000_000L) + 0.0 : g.anyLong(),
        more);
  }

  /** Typical times left, a digit count's edges (10^k - 1, 10^k), or any positive long. */
  private static long left(Gen g) {
    long ten = (long) Math.pow(10, g.intBetween(1, 18));
    return g.frequency(
        java.util.Map.entry(2, () -> g.longBetween(1, 600_000)),
        java.util.Map.entry(1, () -> ten - g.intBetween(0, 1)),
        java.util.Map.entry(1, () -> g.longBetween(1, Long.MAX_VALUE)));
  }

  /** Typical token counts, or any long (the digits and the double of any value are written). */
  private static long number(Gen g) {
    return g.bool() ? g.longBetween(0, 100_000) : g.anyLong();
  }

  private static Value str(@Nullable String s) {
    return Value.newBuilder().setStringValue(s == null ? "" : s).build();
  }

  private static Value num(double d) {
    return Value.newBuilder().setNumberValue(d).build();
  }

  private static HeaderValueOption header(String key, String value) {
    return HeaderValueOption.newBuilder()
        .setHeader(HeaderValue.newBuilder().setKey(key).setRawValue(ByteString.copyFromUtf8(value)))
        .setAppendAction(HeaderValueOption.HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD)
        .build();
  }
}
