package io.sluice.feature.intake;

import io.sluice.config.IntakeSection;
import io.sluice.config.SluiceConfig;
import io.sluice.core.admission.AdmissionController;
import io.sluice.core.admission.PoolState;
import io.sluice.core.intake.DispatchMarker;
import io.sluice.core.intake.DispatchPolicy;
import io.sluice.core.intake.IntakePolicy;
import io.sluice.core.intake.JobResults;
import io.sluice.core.intake.JobStore;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.observability.IntakeMetrics;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpTimeoutException;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs accepted background jobs (docs/intake.md, "Dispatch"): one loop per replica, a step per pool
 * every {@link IntakeFeature#DISPATCH_INTERVAL_MILLIS} (and at once after each claim while there is
 * room). A pool has room when none of its classes has a request waiting (never delay interactive
 * work) and one of intake's classes has headroom ({@link PoolState#classHeadroom}); then one job is
 * claimed ({@link JobStore#claim}, with {@code intake.dispatch.lease}) and POSTed through Envoy's
 * loopback listener ({@code intake.dispatch.url} + the Responses path) with its body's {@code
 * background} set to false, its trusted headers ({@code intake.dispatch.headers}) and the signed
 * marker ({@link DispatchMarker}), so that Sluice admits it against its class like any request. At
 * most {@code intake.dispatch.maxInFlight} jobs per pool run at once; nothing here blocks: the
 * claim and the call are asynchronous, their callbacks hop to the loop's thread or run on the HTTP
 * client's. The answer ends the job ({@link JobResults}, {@link JobStore#complete}, exactly once);
 * a job the pool turns away on arrival (no room after all) is given back ({@link JobStore#release})
 * for the next claim by any replica, instead of waiting out its lease. Stopped on shutdown ({@link
 * #close}): running jobs are not completed by this replica; their leases lapse and another replica
 * claims them again.
 */
public final class Dispatcher implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Dispatcher.class);
  private static final String SLUICE_REASON = "x-sluice-reason";

  private final JobStore store;
  private final AdmissionController controller;
  private final Supplier<SluiceConfig> config;
  private final Map<String, String> env;
  private final Clock clock;
  private final ScheduledExecutorService loop;
  private final IntakeMetrics metrics;
  private final String consumer;
  private final HttpClient http;
  // per pool name (bounded by the config's pools): jobs running, a claim outstanding
  private final ConcurrentMap<String, PoolRun> pools = new ConcurrentHashMap<>();
  private final AtomicBoolean warned = new AtomicBoolean();
  private volatile boolean closed;
  private volatile @Nullable Keyed keyed;

  /** The marker of one secret variable's value (made again when the config names another). */
  private record Keyed(String markerKeyEnv, @Nullable DispatchMarker marker) {}

  private static final class PoolRun {
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicBoolean claiming = new AtomicBoolean();
    final AtomicBoolean reading = new AtomicBoolean(); // a backlog read outstanding
    // the work of the job last given back because its pool could not start it (0: none): no claim
    // until its class has room for that much
    final AtomicLong needWork = new AtomicLong();
  }

  /**
   * @param env the process environment (the secret's variable is read from it)
   * @param loop the thread its steps run on (the process's housekeeping)
   * @param consumer this replica's name in the store's consumer group
   */
  public Dispatcher(
      JobStore store,
      AdmissionController controller,
      Supplier<SluiceConfig> config,
      Map<String, String> env,
      Clock clock,
      ScheduledExecutorService loop,
      IntakeMetrics metrics,
      String consumer) {
    this.store = store;
    this.controller = controller;
    this.config = config;
    this.env = Map.copyOf(env);
    this.clock = clock;
    this.loop = loop;
    this.metrics = metrics;
    this.consumer = consumer;
    this.http =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .followRedirects(HttpClient.Redirect.NEVER)
            .build();
  }

  /**
   * The marker keyed by {@code d.markerKeyEnv}'s value in {@code env}, or null when it is unset.
   */
  public static @Nullable DispatchMarker marker(DispatchPolicy d, Map<String, String> env) {
    String secret = env.get(d.markerKeyEnv());
    if (secret == null || secret.length() < 16) {
      return null;
    }
    return new DispatchMarker(secret.getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }

  /** Steps every {@link IntakeFeature#DISPATCH_INTERVAL_MILLIS} until {@link #close}. */
  public void start() {
    long every = IntakeFeature.DISPATCH_INTERVAL_MILLIS;
    var unused = loop.scheduleWithFixedDelay(this::step, every, every, TimeUnit.MILLISECONDS);
  }

  /** One step: each pool with room claims a job. Never throws (a timer task would stop). */
  void step() {
    try {
      for (String pool : controller.poolNames()) {
        readBacklog(pool);
        tryPool(pool);
      }
    } catch (RuntimeException e) {
      LOG.warn("intake dispatch: {}", e.toString());
    }
  }

  private @Nullable DispatchMarker marker(DispatchPolicy d) {
    Keyed k = keyed;
    if (k == null || !k.markerKeyEnv().equals(d.markerKeyEnv())) {
      k = new Keyed(d.markerKeyEnv(), marker(d, env));
      keyed = k;
    }
    if (k.marker() == null && warned.compareAndSet(false, true)) {
      LOG.warn(
          "intake dispatch: environment variable {} (intake.dispatch.markerKeyEnv) is unset or"
              + " shorter than 16 characters: no job is dispatched",
          d.markerKeyEnv());
    }
    return k.marker();
  }

  /**
   * The pool's backlog into the gauges ({@link IntakeMetrics#backlog}) while intake is on, dispatch
   * or not: one read per pool per step at most; a failed read leaves the last values.
   */
  private void readBacklog(String pool) {
    SluiceConfig c = config.get();
    IntakePolicy p = c.section(IntakeSection.SECTION);
    if (closed || !p.enabled()) {
      return;
    }
    PoolRun run = pools.computeIfAbsent(pool, k -> new PoolRun());
    if (!run.reading.compareAndSet(false, true)) {
      return;
    }
    long now = clock.millis();
    store
        .backlog(c.quotas().keyPrefix(), pool, now, p.retention().toMillis())
        .whenComplete(
            (b, failure) -> {
              run.reading.set(false);
              if (failure == null) {
                long age = b.oldestCreatedMillis() < 0 ? 0 : now - b.oldestCreatedMillis();
                double drain = store.drainedWorkPerSecond(c.quotas().keyPrefix(), pool, now);
                metrics.backlog(pool, b.waiting(), Math.max(0, age) / 1000.0, b.expired(), drain);
              }
            });
  }

  private void tryPool(String pool) {
    if (closed) {
      return;
    }
    SluiceConfig c = config.get();
    IntakePolicy p = c.section(IntakeSection.SECTION);
    DispatchPolicy d = p.dispatch();
    if (!p.enabled() || !d.enabled()) {
      return;
    }
    DispatchMarker marker = marker(d);
    if (marker == null) {
      return;
    }
    PoolRun run = pools.computeIfAbsent(pool, k -> new PoolRun());
    if (run.inFlight.get() >= d.maxInFlight() || !room(pool, p, run.needWork.get())) {
      return;
    }
    if (!run.claiming.compareAndSet(false, true)) {
      return; // one claim at a time per pool: the next step, or its answer, claims the next
    }
    String prefix = c.quotas().keyPrefix();
    store
        .claim(
            prefix, pool, consumer, clock.millis(), d.lease().toMillis(), p.retention().toMillis())
        .whenCompleteAsync(
            (job, failure) -> {
              run.claiming.set(false);
              if (failure != null) {
                metrics.dispatch(pool, "", "store_failed");
                LOG.warn("intake dispatch: claim in pool {} failed: {}", pool, failure.toString());
                return;
              }
              if (job == null || closed) {
                return; // none waits (or stopping: the lease lapses)
              }
              PoolState ps = controller.pool(pool);
              if (ps != null && !fits(ps, job)) {
                giveBack(pool, job, p, prefix, run); // it would wait in Sluice's queue: not sent
                return;
              }
              run.needWork.set(0);
              run.inFlight.incrementAndGet();
              send(pool, job, p, d, marker, prefix, run);
              again(pool);
            },
            loop);
  }

  /**
   * Whether the pool can start {@code job} now, as far as this replica can tell: when it holds the
   * whole pool (no replica shares), its work must fit its class's room. With shares it is sent: its
   * admission counts what this replica's share lacks (a refused request is demand, and the shares
   * follow demand), so a job too large for any one idle share still gets one; turned away, it is
   * given back ({@code returned}) and reads {@code queued} throughout.
   */
  private static boolean fits(PoolState ps, JobStore.Claimed job) {
    return ps.replicaShare() < 1 || ps.canStart(job.className(), job.workUnits());
  }

  /**
   * The claimed job's pool cannot start it now (its class has some room, not enough for it): given
   * back at once, nothing sent; no claim until its class has room for its work ({@link #room}).
   * Counted {@code no_room}.
   */
  private void giveBack(
      String pool, JobStore.Claimed job, IntakePolicy p, String prefix, PoolRun run) {
    run.needWork.set(Math.max(1, job.workUnits()));
    store
        .release(prefix, job.id(), job.attempt(), clock.millis(), p.retention().toMillis())
        .whenComplete(
            (given, failure) -> {
              metrics.dispatch(pool, job.className(), failure != null ? "store_failed" : "no_room");
              if (failure != null) {
                LOG.warn(
                    "intake dispatch: giving job {} back failed (claimed again after its lease): {}",
                    job.id(),
                    failure.toString());
              }
            });
  }

  /** Another step for {@code pool} at once (there may be room for the next job). */
  private void again(String pool) {
    try {
      loop.execute(() -> tryPool(pool));
    } catch (RejectedExecutionException e) {
      // stopping
    }
  }

  /**
   * Idle room only: no class of the pool has a request waiting, and one of the classes intake takes
   * in ({@link IntakePolicy#dispatches}: {@code intake.classes} and {@code whenLate}'s accepting
   * classes; all the pool's when intake names routes only) has headroom. Another class's headroom
   * (say, interactive's reserve) is no room for a job: its request would wait in Sluice's queue.
   * After a job was given back for want of room, its class must have room for {@code needWork}.
   */
  private boolean room(String pool, IntakePolicy p, long needWork) {
    PoolState ps = controller.pool(pool);
    if (ps == null) {
      return false;
    }
    boolean headroom = false;
    for (ClassPolicy k : ps.classes()) {
      if (ps.queueDepth(k.name()) > 0) {
        return false;
      }
      if (p.dispatches(k.name())
          && ps.classHeadroom(k.name()) > 0
          && (needWork <= 0 || ps.canStart(k.name(), needWork))) {
        headroom = true;
      }
    }
    return headroom;
  }

  private void send(
      String pool,
      JobStore.Claimed job,
      IntakePolicy p,
      DispatchPolicy d,
      DispatchMarker marker,
      String prefix,
      PoolRun run) {
    HttpRequest request;
    try {
      request = request(pool, job, p, d, marker);
    } catch (IllegalArgumentException e) {
      end(pool, job, p, prefix, run, failed("invalid_request", e.getMessage()));
      return;
    }
    metrics.dispatch(pool, job.className(), "dispatched");
    var unused =
        http.sendAsync(request, BoundedBody.handler(p.maxResultBytes()))
            .whenComplete(
                (response, failure) -> {
                  JobResults.Outcome o;
                  if (failure != null) {
                    Throwable t =
                        failure instanceof CompletionException ? failure.getCause() : failure;
                    o =
                        t instanceof HttpTimeoutException
                            ? failed(
                                "upstream_timeout",
                                "no answer within intake.dispatch.timeout ("
                                    + d.timeout().toSeconds()
                                    + " s)")
                            : failed(
                                "upstream_unavailable", "the dispatch listener did not answer");
                  } else {
                    o =
                        JobResults.of(
                            job.id(),
                            response.statusCode(),
                            response.body(),
                            response.headers().firstValue(SLUICE_REASON).orElse(null),
                            p.maxResultBytes());
                  }
                  end(pool, job, p, prefix, run, o);
                });
  }

  private HttpRequest request(
      String pool, JobStore.Claimed job, IntakePolicy p, DispatchPolicy d, DispatchMarker marker) {
    String path = p.statusPath().substring(0, p.statusPath().length() - 1); // the create route
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(d.url() + path))
            .timeout(d.timeout())
            .header("content-type", "application/json")
            .header(
                DispatchMarker.HEADER,
                marker.sign(job.id(), job.tenant(), clock.millis() + d.timeout().toMillis()))
            .POST(HttpRequest.BodyPublishers.ofByteArray(JobResults.forUpstream(job.body())));
    for (Map.Entry<String, String> h : d.headers().entrySet()) {
      String v =
          switch (h.getValue()) {
            case "tenant" -> job.tenant();
            case "pool" -> pool;
            case "class" -> job.className();
            default -> job.route();
          };
      b.header(h.getKey(), v);
    }
    return b.build();
  }

  private void end(
      String pool,
      JobStore.Claimed job,
      IntakePolicy p,
      String prefix,
      PoolRun run,
      JobResults.Outcome o) {
    if (closed) { // stopping: its lease lapses, another replica claims it again
      run.inFlight.decrementAndGet();
      metrics.dispatch(pool, job.className(), "abandoned");
      return;
    }
    if (o.status() == null) { // the pool turned it away on arrival: given back, not leased out
      store
          .release(prefix, job.id(), job.attempt(), clock.millis(), p.retention().toMillis())
          .whenComplete(
              (given, failure) -> {
                run.inFlight.decrementAndGet();
                metrics.dispatch(
                    pool, job.className(), failure != null ? "store_failed" : "returned");
                if (failure != null) {
                  LOG.warn(
                      "intake dispatch: giving job {} back failed (claimed again after its"
                          + " lease): {}",
                      job.id(),
                      failure.toString());
                }
              });
      return;
    }
    store
        .complete(
            prefix,
            job.id(),
            o.status(),
            o.result(),
            o.error(),
            clock.millis(),
            p.retention().toMillis())
        .whenComplete(
            (ended, failure) -> {
              run.inFlight.decrementAndGet();
              String event =
                  failure != null
                      ? "store_failed"
                      : Boolean.TRUE.equals(ended) ? o.event() : "late";
              metrics.dispatch(pool, job.className(), event);
              if (!closed) {
                again(pool);
              }
            });
  }

  private static JobResults.Outcome failed(String code, @Nullable String message) {
    return new JobResults.Outcome(
        io.sluice.core.intake.JobStatus.FAILED, null, code + ": " + message);
  }

  /** Jobs of {@code pool} running now (tests). */
  int inFlight(String pool) {
    PoolRun r = pools.get(pool);
    return r == null ? 0 : r.inFlight.get();
  }

  /** Stops claiming; running jobs are left to their leases. */
  @Override
  public void close() {
    closed = true;
  }
}
