package io.sluice.feature.intake;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sluice.bootstrap.Controllers;
import io.sluice.config.ConfigLoader;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.intake.DispatchMarker;
import io.sluice.core.intake.JobStatus;
import io.sluice.core.intake.JobStore;
import io.sluice.core.intake.OperationIds;
import io.sluice.observability.IntakeMetrics;
import io.sluice.store.MutableClock;
import io.sluice.store.memory.InMemoryJobStore;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The dispatcher on the in-memory store, a fake clock and a local HTTP server standing in for the
 * Envoy loopback listener: it claims only when its pool has room for the class, sends the job with
 * its signed marker and trusted headers, stores the answer (or the failure) once, and reclaims a
 * job whose replica's lease lapsed.
 */
class DispatcherTest {
  private static final String SECRET = "a-test-secret-of-32-characters!!";
  private static final long T0 = 1_800_000_000_000L;
  private static final long KEEP = 86_400_000L;
  private static final ObjectMapper JSON = new ObjectMapper();

  private record Seen(String path, Map<String, String> headers, String body) {}

  private final BlockingQueue<Seen> seen = new LinkedBlockingQueue<>();
  private volatile int answerStatus = 200;
  private volatile String answerBody =
      "{\"id\":\"resp_upstream\",\"object\":\"response\",\"status\":\"completed\","
          + "\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\","
          + "\"text\":\"the report\"}]}]}";
  private final MutableClock clock = new MutableClock(Instant.ofEpochMilli(T0));
  private final InMemoryJobStore store = new InMemoryJobStore(1000);
  private final ScheduledExecutorService loop = Executors.newSingleThreadScheduledExecutor();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private String prefix = "";
  private HttpServer upstream;
  private Dispatcher dispatcher;
  private AdmissionController controller;
  private SluiceConfig config;

  private Dispatcher start(String batchClass, int maxResultBytes) throws Exception {
    return start(batchClass, maxResultBytes, "classes: [batch]");
  }

  /** {@code intakeClasses}: the intake section's line naming its classes. */
  private Dispatcher start(String batchClass, int maxResultBytes, String intakeClasses)
      throws Exception {
    upstream = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    upstream.createContext(
        "/",
        ex -> {
          Map<String, String> h = new java.util.TreeMap<>();
          ex.getRequestHeaders().forEach((k, v) -> h.put(k.toLowerCase(), v.get(0)));
          seen.add(
              new Seen(
                  ex.getRequestURI().getPath(),
                  h,
                  new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8)));
          byte[] b = answerBody.getBytes(StandardCharsets.UTF_8);
          ex.getResponseHeaders().add("content-type", "application/json");
          ex.sendResponseHeaders(answerStatus, b.length);
          ex.getResponseBody().write(b);
          ex.close();
        });
    upstream.start();
    String yaml =
        """
        pools: {gpu: {capacity: 100000}}
        classes:
          interactive: {rank: 0, reservedShare: 0.8}
          batch: %s
        signals: {tenant: [{header: x-tenant-id}]}
        routes:
          - {name: responses, match: {pathPrefix: /v1/responses}, class: batch, format: openai-responses}
        intake:
          enabled: true
          %s
          maxResultBytes: %d
          dispatch:
            url: http://127.0.0.1:%d
            markerKeyEnv: TEST_DISPATCH_SECRET
            headers: {x-tenant-id: tenant, x-sluice-class: class}
            timeout: 5s
            lease: 30s
        """
            .formatted(batchClass, intakeClasses, maxResultBytes, upstream.getAddress().getPort());
    config = ConfigLoader.parse(yaml);
    prefix = config.quotas().keyPrefix();
    controller = Controllers.forPolicy(config, Math::random);
    dispatcher =
        new Dispatcher(
            store,
            controller,
            () -> config,
            Map.of("TEST_DISPATCH_SECRET", SECRET),
            clock,
            loop,
            new IntakeMetrics(registry, () -> 0),
            "replica-a");
    return dispatcher;
  }

  @AfterEach
  void stop() {
    if (dispatcher != null) {
      dispatcher.close();
    }
    loop.shutdownNow();
    if (upstream != null) {
      upstream.stop(0);
    }
  }

  private String enqueue(String tenant) {
    return enqueue(tenant, 100);
  }

  private String enqueue(String tenant, long work) {
    String id = OperationIds.next();
    JobStore.NewJob job =
        new JobStore.NewJob(
            id,
            tenant,
            "gpu",
            "batch",
            "responses",
            "m1",
            work,
            clock.millis(),
            clock.millis() + 3_600_000,
            "{\"model\":\"m1\",\"input\":\"write a report\",\"background\":true}"
                .getBytes(StandardCharsets.UTF_8));
    JobStore.Enqueued e =
        store
            .enqueue(prefix, job, new JobStore.Caps(100, 1_000_000, KEEP))
            .toCompletableFuture()
            .join();
    assertThat(e.accepted()).isTrue();
    return id;
  }

  private JobStore.JobView read(String tenant, String id) {
    return store.read(prefix, tenant, id, clock.millis(), KEEP).toCompletableFuture().join();
  }

  /** Waits (at most 5 s) until the job has ended. */
  private JobStore.JobView awaitDone(String tenant, String id) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    JobStore.JobView v = read(tenant, id);
    while (!v.status().done() && System.nanoTime() - until < 0) {
      Thread.sleep(20);
      v = read(tenant, id);
    }
    return v;
  }

  private double count(String event) {
    var c = registry.find("sluice.intake.dispatch").tag("event", event).counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void withRoom_claimsAndSends_throughTheListener_thenStoresTheResultOnce() throws Exception {
    start("{rank: 1, borrow: true}", 1 << 20);
    String id = enqueue("acme");
    dispatcher.step();

    Seen s = seen.poll(5, TimeUnit.SECONDS);
    assertThat(s).isNotNull();
    assertThat(s.path()).isEqualTo("/v1/responses");
    assertThat(s.headers())
        .containsEntry("x-tenant-id", "acme")
        .containsEntry("x-sluice-class", "batch")
        .containsEntry("content-type", "application/json");
    DispatchMarker m = new DispatchMarker(SECRET.getBytes(StandardCharsets.UTF_8));
    assertThat(m.invalid(s.headers().get("x-sluice-dispatch"), "acme", clock.millis())).isNull();
    assertThat(s.headers().get("x-sluice-dispatch")).startsWith(id + ".");
    assertThat(JSON.readTree(s.body()).get("background").asBoolean()).isFalse();

    JobStore.JobView v = awaitDone("acme", id);
    assertThat(v.status()).isEqualTo(JobStatus.COMPLETED);
    JsonNode result = JSON.readTree(v.result());
    assertThat(result.get("id").asText()).isEqualTo(id);
    assertThat(result.at("/output/0/content/0/text").asText()).isEqualTo("the report");
    assertThat(count("dispatched")).isEqualTo(1);
    awaitCount("completed", 1);

    dispatcher.step(); // nothing else waits: nothing sent again
    assertThat(seen.poll(300, TimeUnit.MILLISECONDS)).isNull();
    assertThat(read("acme", id).status()).isEqualTo(JobStatus.COMPLETED);
  }

  private void awaitCount(String event, double n) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (count(event) < n && System.nanoTime() - until < 0) {
      Thread.sleep(10);
    }
    assertThat(count(event)).isEqualTo(n);
  }

  @Test
  void withoutHeadroomForTheClass_claimsNothing() throws Exception {
    // batch may not borrow and reserves nothing: never any room for it
    start("{rank: 1, borrow: false, reservedShare: 0.0}", 1 << 20);
    String id = enqueue("acme");
    dispatcher.step();
    assertThat(seen.poll(500, TimeUnit.MILLISECONDS)).isNull();
    assertThat(read("acme", id).status()).isEqualTo(JobStatus.QUEUED);
    assertThat(count("dispatched")).isZero();
  }

  @Test
  void lateIntakeOnly_anotherClassesHeadroom_isNoRoomForAJob() throws Exception {
    // intake takes batch in late only (no intake.classes): interactive's free reserve is not room
    // for a batch job, whose request would wait in Sluice's queue while it read in_progress
    start("{rank: 1, borrow: false, reservedShare: 0.0}", 1 << 20, "whenLate: {batch: accept}");
    String id = enqueue("acme");
    dispatcher.step();
    assertThat(seen.poll(500, TimeUnit.MILLISECONDS)).isNull();
    assertThat(read("acme", id).status()).isEqualTo(JobStatus.QUEUED);
    assertThat(count("dispatched")).isZero();
  }

  @Test
  void aJobItsClassHasSomeRoomForButNotEnough_isGivenBackUnsent_andNotClaimedAgain()
      throws Exception {
    // batch holds 1,000 of the pool's 100,000 units and may not borrow; 600 run: some headroom,
    // an 800-unit job does not fit. Claimed, it is given back at once (never sent), and not
    // claimed again while its class has no room for it
    start("{rank: 1, borrow: false, reservedShare: 0.01}", 1 << 20);
    long now = System.nanoTime();
    var running =
        controller.decide(
            new io.sluice.core.admission.AdmissionRequest(
                config.pools().get("gpu"),
                config.classes().get("batch"),
                new io.sluice.core.policy.Tenant(
                    "acme", io.sluice.core.policy.TierPolicy.defaults("pro")),
                600,
                now,
                now + Duration.ofMinutes(1).toNanos(),
                -1,
                -1),
            io.sluice.core.admission.Ask.now(now));
    assertThat(running).isInstanceOf(io.sluice.core.admission.Decision.Admit.class);
    String id = enqueue("acme", 800);
    dispatcher.step();
    awaitCount("no_room", 1);
    assertThat(seen.poll(300, TimeUnit.MILLISECONDS)).isNull();
    assertThat(read("acme", id).status()).isEqualTo(JobStatus.QUEUED);
    dispatcher.step();
    dispatcher.step();
    assertThat(seen.poll(300, TimeUnit.MILLISECONDS)).isNull();
    assertThat(count("no_room")).isEqualTo(1);
    assertThat(count("dispatched")).isZero();
  }

  @Test
  void eachStep_readsTheBacklog_intoItsGauges_andCountsExpiredJobsOnce() throws Exception {
    start("{rank: 1, borrow: false, reservedShare: 0.0}", 1 << 20);
    enqueue("acme");
    clock.advance(Duration.ofSeconds(30));
    enqueue("beta");
    clock.advance(Duration.ofSeconds(15));
    dispatcher.step();
    assertThat(registry.get("sluice.intake.backlog.jobs").tag("pool", "gpu").gauge().value())
        .isEqualTo(2);
    assertThat(registry.get("sluice.intake.backlog.oldest.age").tag("pool", "gpu").gauge().value())
        .isEqualTo(45.0);
    assertThat(registry.get("sluice.intake.expired").tag("pool", "gpu").counter().count()).isZero();
    // both outlive their freshness (an hour): expired once, the backlog empty
    clock.advance(Duration.ofHours(1));
    dispatcher.step();
    dispatcher.step();
    assertThat(registry.get("sluice.intake.backlog.jobs").tag("pool", "gpu").gauge().value())
        .isZero();
    assertThat(registry.get("sluice.intake.backlog.oldest.age").tag("pool", "gpu").gauge().value())
        .isZero();
    assertThat(registry.get("sluice.intake.expired").tag("pool", "gpu").counter().count())
        .isEqualTo(2);
  }

  @Test
  void aLapsedLease_isReclaimed_andTheFirstReplicasLateCompletionChangesNothing() throws Exception {
    start("{rank: 1, borrow: true}", 1 << 20);
    String id = enqueue("acme");
    JobStore.Claimed first =
        store
            .claim(prefix, "gpu", "replica-dead", clock.millis(), 30_000, KEEP)
            .toCompletableFuture()
            .join();
    assertThat(first.id()).isEqualTo(id);
    store
        .start(prefix, id)
        .toCompletableFuture()
        .join(); // the dead replica's request was admitted: it ran
    assertThat(read("acme", id).status()).isEqualTo(JobStatus.IN_PROGRESS);

    dispatcher.step(); // the lease still runs: not reclaimed
    assertThat(seen.poll(500, TimeUnit.MILLISECONDS)).isNull();

    clock.advance(Duration.ofMillis(30_001)); // the dead replica's lease lapsed
    dispatcher.step();
    assertThat(seen.poll(5, TimeUnit.SECONDS)).isNotNull();
    assertThat(awaitDone("acme", id).status()).isEqualTo(JobStatus.COMPLETED);

    boolean late =
        store
            .complete(prefix, id, JobStatus.FAILED, null, "x: late", clock.millis(), KEEP)
            .toCompletableFuture()
            .join();
    assertThat(late).isFalse();
    JobStore.JobView v = read("acme", id);
    assertThat(v.status()).isEqualTo(JobStatus.COMPLETED);
    assertThat(JSON.readTree(v.result()).get("id").asText()).isEqualTo(id);
  }

  @Test
  void upstreamFailure_andATooLargeAnswer_endTheJobFailed_withATypedError() throws Exception {
    start("{rank: 1, borrow: true}", 64);
    answerStatus = 502;
    answerBody = "{\"error\":{\"code\":\"engine_down\",\"message\":\"no\"}}";
    String failed = enqueue("acme");
    dispatcher.step();
    JobStore.JobView v = awaitDone("acme", failed);
    assertThat(v.status()).isEqualTo(JobStatus.FAILED);
    assertThat(v.error()).isEqualTo("upstream_error: the upstream answered 502 (engine_down)");

    answerStatus = 200;
    answerBody = "{\"id\":\"r\",\"output\":\"" + "x".repeat(200) + "\"}";
    String big = enqueue("acme");
    dispatcher.step();
    JobStore.JobView b = awaitDone("acme", big);
    assertThat(b.status()).isEqualTo(JobStatus.FAILED);
    assertThat(b.result()).isNull();
    assertThat(b.error()).startsWith("result_too_large: ");
    awaitCount("failed", 2);
  }

  @Test
  void turnedAwayOnArrival_theJobIsGivenBack_andClaimedAgainAtOnce_notAfterItsLease()
      throws Exception {
    start("{rank: 1, borrow: true}", 1 << 20);
    answerStatus = 503; // Sluice's pool refused it for room (x-sluice-reason below)
    answerBody = "{\"error\":{\"code\":\"overloaded\"}}";
    upstream.removeContext("/");
    upstream.createContext(
        "/",
        ex -> {
          seen.add(new Seen(ex.getRequestURI().getPath(), Map.of(), ""));
          ex.getRequestBody().readAllBytes();
          byte[] b = answerBody.getBytes(StandardCharsets.UTF_8);
          ex.getResponseHeaders().add("x-sluice-reason", "queue_timeout");
          ex.sendResponseHeaders(answerStatus, b.length);
          ex.getResponseBody().write(b);
          ex.close();
        });
    String id = enqueue("acme");
    dispatcher.step();
    assertThat(seen.poll(5, TimeUnit.SECONDS)).isNotNull();
    awaitCount("returned", 1);
    assertThat(read("acme", id).status()).isEqualTo(JobStatus.QUEUED);
    assertThat(dispatcher.inFlight("gpu")).isZero();
    // the clock has not moved (the lease is 30 s): another replica claims it at once
    JobStore.Claimed again =
        store
            .claim(prefix, "gpu", "replica-b", clock.millis(), 30_000, KEEP)
            .toCompletableFuture()
            .join();
    assertThat(again).isNotNull();
    assertThat(again.id()).isEqualTo(id);
    assertThat(again.attempt()).isEqualTo(2);
  }
}
