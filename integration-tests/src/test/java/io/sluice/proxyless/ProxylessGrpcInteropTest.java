package io.sluice.proxyless;

import static io.sluice.proxyless.ProxylessHarness.options;
import static io.sluice.proxyless.ProxylessHarness.policy;
import static io.sluice.proxyless.ProxylessHarness.with;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.xds.shaded.io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Sluice behind grpc-java's own xDS ext_proc filter (gRFC A93, grpc-xds 1.85): a second,
 * independent ext_proc client next to the Envoy emulator. What the client sends and honours is in
 * docs/emulator.md ("grpc-java's xDS ext_proc client"); the deployment in docs/envoy.md ("Proxyless
 * gRPC").
 */
@Timeout(60)
class ProxylessGrpcInteropTest {
  private ProxylessHarness h;

  @AfterEach
  void tearDown() {
    if (h != null) {
      h.close();
    }
  }

  @Test
  void admit_routedByGrpcMethod_decidedAtHeaders_permitBackAtTheEnd() {
    h = ProxylessHarness.start(policy()); // unmatched: reject, so an admit proves the route match

    GrpcCall.Result r = GrpcCall.unary(h.channel, options(), "hello");

    assertThat(r.status().getCode()).as("%s", r).isEqualTo(Status.Code.OK);
    assertThat(r.messages()).containsExactly("reply to hello");
    // Sluice's CONTINUE header mutation reached the model server
    Metadata seen = h.model.headers().get(0);
    assertThat(seen.get(Metadata.Key.of("x-sluice-decision", Metadata.ASCII_STRING_MARSHALLER)))
        .isEqualTo("admit");
    // no body, no content-length: estimation.defaultInputTokens (300 in the suite's policy) plus
    // the class's output reserve (interactive: 100)
    assertThat(seen.get(Metadata.Key.of("x-sluice-estimate", Metadata.ASCII_STRING_MARSHALLER)))
        .startsWith("input=300;output=100;");
    h.awaitNothingInFlight();
    assertThat(h.released("completed")).isEqualTo(1);
    assertThat(h.releasedAny()).isEqualTo(1);
    assertThat(h.counter("sluice.decisions", "decision", "admit", "class", "interactive"))
        .as("the route of /sluice.test.Llm/Generate")
        .isEqualTo(1);
    assertThat(h.sluice.registry().find("sluice.decision.latency").tag("phase", "headers").timer())
        .as("decided at request headers")
        .isNotNull();
    assertThat(h.counter("sluice.extproc.stream.errors")).isZero();
  }

  /**
   * Routing by the channel's authority: the filter sends it as the attribute {@code request.host}
   * (ExternalProcessorUtil.collectAttributes, from {@code Channel.authority()}), and the policy
   * feeds it to the route signal. The three calls go to the same gRPC method, so only the authority
   * tells the routes apart; one that matches no route gets unmatched's answer (reject: 404
   * unknown_route, UNIMPLEMENTED to a gRPC client).
   */
  @Test
  void admit_routedByChannelAuthority_unmatchedAuthorityUnimplemented() {
    ObjectNode p = with(policy(), "signals.route", "[{attribute: request.host}]");
    with(
        p,
        "routes",
        "[{name: chat, match: {route: chat.llm.internal}, class: interactive},"
            + " {name: bulk, match: {route: bulk.llm.internal}, class: batch}]");
    h = ProxylessHarness.start(p);

    GrpcCall.Result chat = GrpcCall.unary(h.channel("chat.llm.internal"), options(), "chat");
    assertThat(chat.status().getCode()).as("%s", chat).isEqualTo(Status.Code.OK);
    assertThat(h.counter("sluice.decisions", "decision", "admit", "class", "interactive"))
        .as("chat.llm.internal: route chat, class interactive")
        .isEqualTo(1);
    GrpcCall.Result bulk = GrpcCall.unary(h.channel("bulk.llm.internal"), options(), "bulk");
    assertThat(bulk.status().getCode()).as("%s", bulk).isEqualTo(Status.Code.OK);
    assertThat(h.counter("sluice.decisions", "decision", "admit", "class", "batch"))
        .as("bulk.llm.internal: route bulk, class batch")
        .isEqualTo(1);
    // each class's output reserve reached the model in the estimate (interactive 100, batch 50)
    Metadata.Key<String> estimate =
        Metadata.Key.of("x-sluice-estimate", Metadata.ASCII_STRING_MARSHALLER);
    assertThat(h.model.headers().get(0).get(estimate)).startsWith("input=300;output=100;");
    assertThat(h.model.headers().get(1).get(estimate)).startsWith("input=300;output=50;");

    GrpcCall.Result other = GrpcCall.unary(h.channel("other.llm.internal"), options(), "other");

    assertThat(other.status().getCode()).as("%s", other).isEqualTo(Status.Code.UNIMPLEMENTED);
    assertThat(other.status().getDescription()).isEqualTo("sluice_unknown_route");
    assertThat(other.trailer("x-sluice-reason")).isEqualTo("unknown_route");
    assertThat(h.decisions("reject", "unknown_route")).isEqualTo(1);
    assertThat(h.model.calls()).as("the unmatched call never ran").isEqualTo(2);
    h.awaitNothingInFlight();
    assertThat(h.released("completed")).isEqualTo(2);
  }

  /** Trailers SEND: released at response_trailers; SKIP: at the client's close of the stream. */
  @ParameterizedTest
  @EnumSource(
      value = ProcessingMode.HeaderSendMode.class,
      names = {"SEND", "SKIP"})
  void streamingCall_holdsItsPermitUntilTheCallEnds(ProcessingMode.HeaderSendMode trailers) {
    h =
        ProxylessHarness.start(
            policy(),
            f -> {
              f.getProcessingModeBuilder().setResponseTrailerMode(trailers);
              return f;
            });
    h.model.hold(true);

    GrpcCall call = GrpcCall.start(h.channel, FakeModelServer.STREAM, options(), "tell me");
    assertThat(call.firstMessage()).isEqualTo("first token of tell me");

    // response headers went by: the call still runs, and so does its permit
    assertThat(h.pool().requestsInFlight()).as("permit while the stream runs").isEqualTo(1);
    assertThat(h.releasedAny()).isZero();

    h.model.releaseAll();
    GrpcCall.Result r = call.result();
    assertThat(r.status().getCode()).as("%s", r).isEqualTo(Status.Code.OK);
    assertThat(r.messages()).containsExactly("first token of tell me", "last token");
    h.awaitNothingInFlight();
    assertThat(h.released("completed")).isEqualTo(1);
    assertThat(h.releasedAny()).isEqualTo(1);
  }

  @Test
  void refuse_tenantOwnLimit_resourceExhaustedWithReasonAndRetryHint() {
    h =
        ProxylessHarness.start(
            with(with(policy(), "tiers.pro.rpm", "1"), "tenants.unknown", "reject"));

    assertThat(GrpcCall.unary(h.channel, options(), "one").status().isOk()).isTrue();
    GrpcCall.Result r = GrpcCall.unary(h.channel, options(), "two");

    assertThat(r.status().getCode()).as("%s", r).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(r.status().getDescription()).isEqualTo("sluice_tenant_rate");
    assertThat(r.trailer("x-sluice-reason")).isEqualTo("tenant_rate");
    assertThat(r.trailer("retry-after")).as("retry hint").matches("[1-9][0-9]*");
    assertThat(r.trailer("content-type")).as("no HTTP content-type in gRPC trailers").isNull();
    assertThat(h.model.calls()).isEqualTo(1);
    h.awaitNothingInFlight();
  }

  @Test
  void refuse_poolSaturated_unavailableWithReasonAndRetryHint() {
    h = ProxylessHarness.start(with(policy(), "pools.gpu.maxRequests", "1"));
    h.model.hold(true);
    GrpcCall first = GrpcCall.start(h.channel, FakeModelServer.GENERATE, options(), "one");
    await().atMost(Duration.ofSeconds(5)).until(() -> h.model.inFlight() == 1);

    GrpcCall.Result r = GrpcCall.unary(h.channel, options(), "two");

    assertThat(r.status().getCode()).as("%s", r).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(r.trailer("x-sluice-reason")).isEqualTo("pool_saturated");
    assertThat(r.trailer("retry-after")).as("retry hint").matches("[1-9][0-9]*");
    assertThat(h.model.calls()).isEqualTo(1);
    h.model.releaseAll();
    assertThat(first.result().status().isOk()).isTrue();
    h.awaitNothingInFlight();
  }

  /**
   * Queue-hold: grpc-java has no message timer and ignores override_message_timeout (the answer
   * Sluice sends first matches none of the cases in DataPlaneClientCall's onNext), so it simply
   * waits for the real answer; Sluice bounds the hold itself (pool maxMessageTimeout, class
   * maxQueueWait).
   */
  @Test
  void queueHold_heldCallStartsWhenThePermitComesBack() {
    h = ProxylessHarness.start(queuePolicy());
    h.model.hold(true);
    GrpcCall first = GrpcCall.start(h.channel, FakeModelServer.GENERATE, options(), "one");
    await().atMost(Duration.ofSeconds(5)).until(() -> h.model.inFlight() == 1);

    GrpcCall second = GrpcCall.start(h.channel, FakeModelServer.GENERATE, options(), "two");
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> h.counter("sluice.extproc.overrides", "pool", "gpu") == 1);
    assertThat(h.model.calls()).as("the held call waits").isEqualTo(1);

    h.model.hold(false);
    h.model.releaseAll(); // the first ends: its permit goes to the held call
    assertThat(first.result().status().isOk()).isTrue();
    GrpcCall.Result r = second.result();
    assertThat(r.status().getCode()).as("%s", r).isEqualTo(Status.Code.OK);
    assertThat(r.messages()).containsExactly("reply to two");
    assertThat(h.model.maxInFlight()).isEqualTo(1);
    h.awaitNothingInFlight();
    assertThat(h.released("completed")).isEqualTo(2);
  }

  /**
   * The hold ends by itself at the class's maxQueueWait (300 ms): the first call outlives the held
   * one's deadline (5 s), so no release (which also expires what is due) answers the held call.
   */
  @Test
  void queueHold_expiresAsUnavailableQueueTimeout() {
    h = ProxylessHarness.start(with(queuePolicy(), "classes.interactive.maxQueueWait", "300ms"));
    h.model.hold(true);
    GrpcCall first =
        GrpcCall.start(
            h.channel,
            FakeModelServer.GENERATE,
            io.grpc.CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS),
            "one");
    await().atMost(Duration.ofSeconds(5)).until(() -> h.model.inFlight() == 1);

    GrpcCall.Result r =
        GrpcCall.unary(
            h.channel, io.grpc.CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS), "two");

    assertThat(r.status().getCode()).as("%s", r).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(r.trailer("x-sluice-reason")).isEqualTo("queue_timeout");
    assertThat(h.counter("sluice.extproc.overrides", "pool", "gpu"))
        .as("held before it expired")
        .isEqualTo(1);
    assertThat(first.done).as("refused while the first call still runs").isNotDone();
    h.model.releaseAll();
    assertThat(first.result().status().isOk()).isTrue();
    h.awaitNothingInFlight();
  }

  @Test
  void cancelWhileQueued_leavesTheQueue_nothingLeaks() {
    h = ProxylessHarness.start(queuePolicy());
    h.model.hold(true);
    GrpcCall first = GrpcCall.start(h.channel, FakeModelServer.GENERATE, options(), "one");
    await().atMost(Duration.ofSeconds(5)).until(() -> h.model.inFlight() == 1);
    GrpcCall second = GrpcCall.start(h.channel, FakeModelServer.GENERATE, options(), "two");
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> h.counter("sluice.extproc.overrides", "pool", "gpu") == 1);

    second.cancel();

    // grpc-java reports its own cancel as INTERNAL: DataPlaneClientCall.cancel marks the ext_proc
    // stream FAILED, then DataPlaneListener.onClose turns the CANCELLED close into INTERNAL
    // "External processor stream failed" (failure_mode_allow false)
    assertThat(second.result().status().getCode()).isEqualTo(Status.Code.INTERNAL);
    await()
        .atMost(Duration.ofSeconds(5))
        .until(
            () ->
                h.sluice.registry().find("sluice.queue.wait").tag("outcome", "cancelled").timer()
                    != null);
    assertThat(h.queueDepth("interactive")).as("left in the queue").isZero();
    h.model.releaseAll();
    assertThat(first.result().status().isOk()).isTrue();
    h.awaitNothingInFlight();
    assertThat(h.model.calls()).as("the cancelled call never ran").isEqualTo(1);
    assertThat(h.releasedAny()).isEqualTo(1);
  }

  /** The call's deadline passes while held: the client sends a trailers-only response_headers. */
  @Test
  void deadlineWhileQueued_leavesTheQueue_withoutAStreamError() {
    h = ProxylessHarness.start(queuePolicy());
    h.model.hold(true);
    GrpcCall first = GrpcCall.start(h.channel, FakeModelServer.GENERATE, options(), "one");
    await().atMost(Duration.ofSeconds(5)).until(() -> h.model.inFlight() == 1);

    GrpcCall.Result r =
        GrpcCall.unary(
            h.channel,
            io.grpc.CallOptions.DEFAULT.withDeadlineAfter(300, TimeUnit.MILLISECONDS),
            "two");

    assertThat(r.status().getCode()).as("%s", r).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
    await()
        .atMost(Duration.ofSeconds(5))
        .until(
            () ->
                h.sluice.registry().find("sluice.queue.wait").tag("outcome", "cancelled").timer()
                    != null);
    assertThat(h.queueDepth("interactive")).as("left in the queue").isZero();
    assertThat(h.counter("sluice.extproc.stream.errors")).isZero();
    h.model.releaseAll();
    assertThat(first.result().status().isOk()).isTrue();
    h.awaitNothingInFlight();
    assertThat(h.model.calls()).isEqualTo(1);
  }

  @Test
  void cancelWhileAdmitted_permitBackAsCancelled() {
    h = ProxylessHarness.start(policy());
    h.model.hold(true);
    GrpcCall call = GrpcCall.start(h.channel, FakeModelServer.STREAM, options(), "go");
    assertThat(call.firstMessage()).isNotNull();
    assertThat(h.pool().requestsInFlight()).isEqualTo(1);

    call.cancel();

    assertThat(call.result().status().getCode()).isEqualTo(Status.Code.INTERNAL); // see above
    h.awaitNothingInFlight();
    assertThat(h.released("cancelled")).isEqualTo(1);
    assertThat(h.releasedAny()).isEqualTo(1);
    await().atMost(Duration.ofSeconds(5)).until(() -> h.model.cancelled() == 1);
  }

  /**
   * Fail-closed while Sluice drains (a call whose stream is open keeps the drain going: new streams
   * are refused UNAVAILABLE, never ended OK, which the client would take as "let it through") and
   * once it is down (no ext_proc server at all).
   */
  @Test
  void sluiceDown_failClosed_callFailsAndNeverReachesTheModel() throws Exception {
    h = ProxylessHarness.start(policy());
    h.model.hold(true);
    GrpcCall running = GrpcCall.start(h.channel, FakeModelServer.STREAM, options(), "up");
    assertThat(running.firstMessage()).isNotNull();
    CompletableFuture<Void> stopped = h.shutdownSluice(Duration.ofSeconds(30));
    await().atMost(Duration.ofSeconds(5)).until(h.sluice::draining);
    h.model.hold(false); // a call let through would come back OK at once

    GrpcCall.Result whileDraining = GrpcCall.unary(h.channel, options(), "draining");

    assertThat(whileDraining.status().getCode())
        .as("%s", whileDraining)
        .isEqualTo(Status.Code.INTERNAL);
    assertThat(whileDraining.status().getDescription())
        .contains("External processor stream failed");
    assertThat(h.counter("sluice.extproc.streams.refused", "reason", "draining")).isEqualTo(1);
    assertThat(h.model.calls()).as("the call refused while draining never ran").isEqualTo(1);
    h.model.releaseAll(); // the open call ends: the drain is over, Sluice stops
    assertThat(running.result().status().isOk()).isTrue();
    stopped.get(20, TimeUnit.SECONDS);

    GrpcCall.Result r = GrpcCall.unary(h.channel, options(), "down");

    // DataPlaneListener.onClose: a failed ext_proc stream without failure_mode_allow closes the
    // call INTERNAL "External processor stream failed"
    assertThat(r.status().getCode()).as("%s", r).isEqualTo(Status.Code.INTERNAL);
    assertThat(r.status().getDescription()).contains("External processor stream failed");
    assertThat(h.model.calls()).isEqualTo(1);
  }

  @Test
  void sluiceDown_failureModeAllow_callGoesThroughUnadmitted() {
    h = ProxylessHarness.start(policy(), f -> f.setFailureModeAllow(true));
    h.stopSluice();

    GrpcCall.Result r = GrpcCall.unary(h.channel, options(), "down");

    assertThat(r.status().getCode()).as("%s", r).isEqualTo(Status.Code.OK);
    assertThat(r.messages()).containsExactly("reply to down");
    assertThat(h.model.calls()).isEqualTo(1);
  }

  @Test
  void manyConcurrentCalls_neverMoreInFlightThanThePoolAllows() {
    int calls = 12;
    int slots = 3;
    h =
        ProxylessHarness.start(
            with(
                with(queuePolicy(), "pools.gpu.maxRequests", Integer.toString(slots)),
                "classes.interactive.queue.maxItems",
                "100"));
    h.model.hold(true);
    List<GrpcCall> all = new ArrayList<>();
    for (int i = 0; i < calls; i++) {
      // streaming calls: response headers and a first message at once, the rest when released
      all.add(GrpcCall.start(h.channel, FakeModelServer.STREAM, options(), "c" + i));
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (all.stream().anyMatch(c -> !c.done.isDone()) && System.nanoTime() < deadline) {
      await()
          .atMost(Duration.ofSeconds(5))
          .until(
              () ->
                  h.model.inFlight() >= slots // more: the assertions below say so
                      || all.stream().filter(c -> !c.done.isDone()).count() == h.model.inFlight());
      assertThat(h.model.inFlight()).as("calls at the model").isLessThanOrEqualTo(slots);
      assertThat(h.pool().requestsInFlight()).as("permits").isLessThanOrEqualTo(slots);
      h.model.releaseAll();
    }
    for (GrpcCall c : all) {
      assertThat(c.result().status().getCode()).as("%s", c.result()).isEqualTo(Status.Code.OK);
      assertThat(c.result().messages()).hasSize(2);
    }
    assertThat(h.model.calls()).isEqualTo(calls);
    assertThat(h.model.maxInFlight()).as("most calls at the model at once").isEqualTo(slots);
    h.awaitNothingInFlight();
    assertThat(h.released("completed")).isEqualTo(calls);
  }

  /**
   * The model fails an admitted call before any message (a trailers-only response): the client
   * sends its trailers as {@code response_headers} with {@code end_of_stream} and no {@code
   * :status} and, from grpc-java, no {@code grpc-status}: Sluice cannot tell the failure, types
   * nothing and counts no status. The call gets the model's own status; the permit comes back at
   * those headers.
   */
  @Test
  void modelFailsBeforeAnyMessage_trailersOnly_callKeepsItsStatus_permitBack() {
    h = ProxylessHarness.start(policy());
    h.model.failWith(Status.RESOURCE_EXHAUSTED.withDescription("model full"));

    GrpcCall.Result r = GrpcCall.unary(h.channel, options(), "x");

    assertThat(r.status().getCode()).as("%s", r).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(r.status().getDescription()).isEqualTo("model full");
    // grpc-java hands on no grpc-status (ProxylessClientBehaviourTest): nothing to type or count
    assertThat(r.trailer("x-sluice-reason")).isNull();
    assertThat(h.counter("sluice.upstream.failures")).isZero();
    assertThat(h.counter("sluice.upstream.responses")).isZero();
    assertThat(h.model.calls()).isEqualTo(1);
    h.awaitNothingInFlight();
    assertThat(h.releasedAny()).isEqualTo(1);
    assertThat(h.counter("sluice.extproc.stream.errors")).isZero();
  }

  @Test
  void grpcBodyMode_isRefusedClearly_andTheCallNeverRuns() {
    h =
        ProxylessHarness.start(
            policy(),
            f -> {
              f.getProcessingModeBuilder()
                  .setRequestBodyMode(ProcessingMode.BodySendMode.GRPC)
                  .setResponseBodyMode(ProcessingMode.BodySendMode.GRPC)
                  .setResponseTrailerMode(ProcessingMode.HeaderSendMode.SEND);
              return f;
            });

    GrpcCall.Result r = GrpcCall.unary(h.channel, options(), "body");

    assertThat(r.status().isOk()).as("%s", r).isFalse();
    assertThat(h.model.calls()).isZero();
    assertThat(h.counter("sluice.extproc.stream.errors", "cause", "unsupported_body_mode"))
        .isEqualTo(1);
    h.awaitNothingInFlight();
  }

  /**
   * Queue-hold on: the pool is one request wide and has a hold budget (the client itself has no
   * message timeout: maxMessageTimeout is Sluice's own bound here).
   */
  private static ObjectNode queuePolicy() {
    ObjectNode p = with(policy(), "pools.gpu.maxRequests", "1");
    with(p, "pools.gpu.maxMessageTimeout", "10s");
    with(p, "pools.gpu.defaultServiceTime", "100ms");
    with(p, "classes.interactive.maxQueueWait", "8s");
    return p;
  }
}
