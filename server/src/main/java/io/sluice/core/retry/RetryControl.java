package io.sluice.core.retry;

import io.sluice.core.admission.Reason;
import io.sluice.core.policy.Tenant;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/**
 * Classifies each request's attempt and applies the retry rules of one config snapshot ({@link
 * RetryPolicy}) on the process's {@link AttemptStore}: one store call per request ({@link #check}),
 * one more to give back an in-flight claim ({@link #complete}) and one per refusal with a
 * Retry-After ({@link #remember}). Thread-safe; the stages it returns never fail (a store failure
 * is answered by {@code quotas.failureMode}: open admits and classifies from the request's own
 * signals, closed refuses what those signals call a retry).
 */
public final class RetryControl {
  private static final RetryControl OFF =
      new RetryControl(RetryPolicy.OFF, null, "", true, System::nanoTime);

  private final RetryPolicy policy;
  private final @Nullable AttemptStore store;
  private final String namespace;
  private final boolean failOpen;
  private final String ownerPrefix = UUID.randomUUID().toString();
  private final AtomicLong owners = new AtomicLong();

  /** The keys of the requests with no operation id, per pool and tenant or client. */
  private final RetryKeyCache keyCache;

  static final int MAX_CACHED_TENANTS = RetryKeyCache.MAX_CACHED_TENANTS;
  static final int MAX_CACHED_CLIENTS = RetryKeyCache.MAX_CACHED_CLIENTS;

  /**
   * With a shared store ({@link AttemptStore#shared}), a tenant's originals that have no operation
   * id and are no retry by their headers reach the store at most once per this interval per pool
   * and tenant, carrying the refills of those held since: such an original only refills its budget
   * bucket, and a network call per request for that would cost more than the rest of the decision.
   * A retry, or a request with an operation id, always goes, and carries them too.
   */
  static final long SEND_ORIGINALS_NANOS = 100_000_000L;

  private final LongSupplier nanoTime;
  private final RetryPolicy.Duplicates.Route anyRoute; // a route's rule without its own: made once

  private final OriginalAttempts originals = new OriginalAttempts(); // the common request's

  /**
   * @param namespace the store's key namespace ({@code quotas.keyPrefix})
   * @param failOpen {@code quotas.failureMode} is {@code open}
   * @param nanoTime the process's ticker ({@code System::nanoTime}): when a shared store was last
   *     sent a tenant's originals
   */
  public RetryControl(
      RetryPolicy policy,
      @Nullable AttemptStore store,
      String namespace,
      boolean failOpen,
      LongSupplier nanoTime) {
    this.nanoTime = nanoTime;
    this.policy = policy;
    RetryPolicy.Duplicates d = policy.duplicates();
    this.anyRoute = new RetryPolicy.Duplicates.Route(d.inFlight(), d.replayWindow());
    this.store = policy.enabled() ? store : null;
    this.namespace = namespace;
    this.failOpen = failOpen;
    this.keyCache = new RetryKeyCache(policy.budget(), namespace, nanoTime);
  }

  /** Retry control off: {@link #enabled} is false, nothing is read or refused. */
  public static RetryControl off() {
    return OFF;
  }

  public boolean enabled() {
    return store != null;
  }

  public RetryPolicy policy() {
    return policy;
  }

  /**
   * Classifies one request and decides whether retry control refuses it.
   *
   * @param operationId the trusted operation id, or null
   * @param poolRetryAfterSeconds the Retry-After of a {@code retry_budget} or {@code
   *     duplicate_operation} refusal (the pool's tenant Retry-After)
   */
  public CompletionStage<Attempt> check(
      String pool,
      String route,
      String tenant,
      @Nullable String operationId,
      AttemptSignals signals,
      long poolRetryAfterSeconds) {
    return check(pool, route, tenant, operationId, signals, p -> poolRetryAfterSeconds);
  }

  /**
   * As above, the pool's Retry-After asked of {@code poolRetryAfterSeconds} (by pool name) only
   * when retry control refuses (the common admitted request does not take the pool's lock for it;
   * the caller's function is made once, not per request).
   */
  public CompletionStage<Attempt> check(
      String pool,
      String route,
      String tenant,
      @Nullable String operationId,
      AttemptSignals signals,
      ToLongFunction<String> poolRetryAfterSeconds) {
    AttemptStore s = store;
    if (s == null) {
      return CompletableFuture.completedFuture(Attempt.UNCLASSIFIED);
    }
    String op = operationId == null || operationId.isEmpty() ? null : operationId;
    RetryPolicy.Duplicates.Route dup = policy.duplicates().routes().get(route);
    dup = dup != null ? dup : anyRoute; // forRoute's rule, without a Route per request
    RetryPolicy.Budget budget = policy.budget();
    boolean headerRetry = signals.claimedAttempt() > 1;
    String client = client(tenant, signals);
    RetryKeyCache.TenantKeys keys =
        client == null ? keyCache.tenant(pool, tenant) : keyCache.client(pool, client);
    if (op == null && !headerRetry && !s.shared() && quietOriginal(s, keys.budget())) {
      // what observe would answer and classify (AttemptStore#quietOriginal): nothing built for it
      double tokens = keys.budget() == null ? Double.NaN : budget.maxTokens();
      return originals.answer(
          originals.of(signal(0, signals), tokens, dup.replayWindow().toMillis()));
    }
    String opKey = op == null ? null : RetryKeys.operation(namespace, pool, tenant, client, op);
    String owner = op == null ? "" : ownerPrefix + ":" + owners.incrementAndGet(); // claims only
    long windowMillis = Math.max(1, policy.window().toMillis());
    String whose = client == null ? tenant : tenant + " (client " + client + ")";
    long deferred = 0;
    if (s.shared()) {
      if (op == null && !headerRetry) { // an original that can only refill its bucket
        if (!budget.enabled()) {
          return CompletableFuture.completedFuture(Attempt.ORIGINAL_UNSENT);
        }
        long now = nanoTime.getAsLong();
        if (now - keys.lastSentNanos < SEND_ORIGINALS_NANOS) {
          keys.deferred.incrementAndGet();
          return CompletableFuture.completedFuture(Attempt.ORIGINAL_UNSENT);
        }
        keys.lastSentNanos = now; // this one goes (its own refill), with those held since the last
        deferred = keys.deferred.getAndSet(0);
      } else {
        deferred = keys.deferred.getAndSet(0);
      }
    }
    AttemptStore.Observe o =
        new AttemptStore.Observe(
            op == null ? null : RetryKeys.seen(namespace, pool, tenant, client, op),
            opKey,
            op == null ? keys.refusal() : RetryKeys.refusal(namespace, pool, tenant, client, op),
            keys.budget(),
            owner,
            headerRetry,
            op != null,
            dup.inFlight() == RetryPolicy.Duplicates.Action.REFUSE,
            !dup.replayWindow().isZero(),
            policy.earlyRetry() == RetryPolicy.EarlyRetry.REFUSE,
            windowMillis,
            Math.max(1, policy.duplicates().maxInFlight().toMillis()),
            budget.maxTokens(),
            budget.tokenRatio(),
            windowMillis,
            deferred);
    long replayMillis = dup.replayWindow().toMillis();
    CompletionStage<AttemptStore.Observation> answer;
    try {
      answer = s.observe(o);
    } catch (RuntimeException e) {
      answer = CompletableFuture.failedFuture(e);
    }
    if (answer instanceof CompletableFuture<AttemptStore.Observation> done
        && done.isDone()
        && !done.isCompletedExceptionally()) { // the in-process store: no stage to chain
      AttemptStore.Observation obs = done.join();
      return originals.answer(
          obs == null
              ? storeFailed(signals)
              : classify(obs, o, signals, owner, replayMillis, poolRetryAfterSeconds, pool, whose));
    }
    return answer.handle(
        (obs, e) ->
            e != null || obs == null
                ? storeFailed(signals)
                : classify(
                    obs, o, signals, owner, replayMillis, poolRetryAfterSeconds, pool, whose));
  }

  /**
   * The store's say on a plain original ({@link AttemptStore#quietOriginal}); false if it threw.
   */
  private static boolean quietOriginal(AttemptStore s, @Nullable String budgetKey) {
    try {
      return s.quietOriginal(budgetKey);
    } catch (RuntimeException e) {
      return false; // its observe answers, or fails as it would have
    }
  }

  /** What signalled the attempt: the store's {@code seen} count, else the request's headers. */
  private static String signal(long seen, AttemptSignals signals) {
    return seen > 1
        ? Attempt.OPERATION
        : signals.retryCount() > 0
            ? Attempt.SDK
            : signals.attemptCount() > 1 ? Attempt.ENVOY : Attempt.NONE;
  }

  /**
   * The client whose own retries these are: the host of the {@code client} signal for the anonymous
   * tenant (every request without a tenant is that one tenant, so without it one client's retries
   * would spend every other's budget), null for any other tenant or without the signal.
   */
  static @Nullable String client(String tenant, AttemptSignals signals) {
    return signals.client() != null && Tenant.ANONYMOUS.equals(tenant)
        ? AttemptSignals.clientHost(signals.client())
        : null;
  }

  /** Client addresses whose keys are cached for {@code pool} (tests: the bound). */
  int cachedClientKeys(String pool) {
    return keyCache.cachedClients(pool);
  }

  /** Tenants whose keys are cached for {@code pool} (tests: the bound). */
  int cachedTenantKeys(String pool) {
    return keyCache.cachedTenants(pool);
  }

  private Attempt classify(
      AttemptStore.Observation obs,
      AttemptStore.Observe o,
      AttemptSignals signals,
      String owner,
      long replayMillis,
      ToLongFunction<String> poolRetryAfterSeconds,
      String pool,
      String tenant) {
    boolean retry = o.retryByHeaders() || obs.seen() > 1;
    int number = retry ? (int) Math.min(1000, Math.max(obs.seen(), signals.claimedAttempt())) : 1;
    String signal = signal(obs.seen(), signals);
    String retryAfter =
        retry && obs.refusalRemembered()
            ? obs.refusalRemainingMillis() > 0 ? Attempt.EARLY : Attempt.HONOURED
            : Attempt.NONE;
    String previous =
        !retry ? Attempt.NONE : obs.refusalRemembered() ? obs.refusalReason() : Attempt.UNKNOWN;
    String duplicate =
        obs.duplicate() == AttemptStore.Observation.IN_FLIGHT
            ? Attempt.IN_FLIGHT
            : obs.duplicate() == AttemptStore.Observation.COMPLETED ? Attempt.REPLAY : Attempt.NONE;
    Attempt.Refusal refusal = null;
    long ageSeconds = Math.max(0, obs.duplicateAgeMillis()) / 1000;
    if (duplicate.equals(Attempt.IN_FLIGHT) && o.refuseInFlight()) {
      refusal =
          new Attempt.Refusal(
              Reason.DUPLICATE_OPERATION,
              409,
              Math.max(1, poolRetryAfterSeconds.applyAsLong(pool)),
              "operation already in flight: its first attempt started "
                  + ageSeconds
                  + " s ago and is still running; wait for its answer instead of sending it"
                  + " again");
    } else if (duplicate.equals(Attempt.REPLAY)) {
      refusal =
          new Attempt.Refusal(
              Reason.DUPLICATE_OPERATION,
              409,
              Math.max(1, poolRetryAfterSeconds.applyAsLong(pool)),
              "operation completed "
                  + ageSeconds
                  + " s ago (replay window "
                  + replayMillis / 1000
                  + " s); send a new idempotency key for a new operation");
    } else if (retryAfter.equals(Attempt.EARLY) && o.refuseEarly()) {
      long given = Math.max(1, obs.refusalRetryAfterSeconds());
      refusal =
          new Attempt.Refusal(
              Reason.EARLY_RETRY,
              429,
              Math.max(given, (obs.refusalRemainingMillis() + 999) / 1000),
              "retry came back "
                  + (given * 1000 - obs.refusalRemainingMillis())
                  + " ms after a refusal that asked for Retry-After "
                  + given
                  + " s; wait that long before retrying");
    } else if (!obs.budgetAllowed()) {
      RetryPolicy.Budget b = policy.budget();
      refusal =
          new Attempt.Refusal(
              Reason.RETRY_BUDGET,
              429,
              Math.max(1, poolRetryAfterSeconds.applyAsLong(pool)),
              "retry budget of "
                  + (b.scope() == RetryPolicy.Budget.Scope.TENANT
                      ? "tenant " + tenant + " in "
                      : "")
                  + "pool "
                  + pool
                  + " is used up ("
                  + String.format(java.util.Locale.ROOT, "%.1f", obs.budgetTokens())
                  + " tokens, retries need more than "
                  + String.format(java.util.Locale.ROOT, "%.1f", b.threshold())
                  + "); new requests are still admitted");
    }
    if (!retry
        && refusal == null
        && !obs.claimed()
        && owner.isEmpty()
        && duplicate.equals(Attempt.NONE)) {
      return originals.of(signal, obs.budgetTokens(), replayMillis);
    }
    return new Attempt(
        number,
        retry,
        signal,
        retryAfter,
        previous,
        obs.budgetTokens(),
        duplicate,
        obs.claimed() ? o.operationKey() : null,
        owner,
        replayMillis,
        refusal,
        false);
  }

  /** The store did not answer: classified from the request's own signals only. */
  private Attempt storeFailed(AttemptSignals signals) {
    boolean retry = signals.claimedAttempt() > 1;
    Attempt.Refusal refusal =
        retry && !failOpen
            ? new Attempt.Refusal(
                Reason.RETRY_BUDGET,
                429,
                1,
                "retry budget: the store did not answer (quotas.failureMode closed)")
            : null;
    return new Attempt(
        retry ? signals.claimedAttempt() : 1,
        retry,
        signals.retryCount() > 0 ? Attempt.SDK : retry ? Attempt.ENVOY : Attempt.NONE,
        Attempt.NONE,
        retry ? Attempt.UNKNOWN : Attempt.NONE,
        Double.NaN,
        Attempt.NONE,
        null,
        "",
        0,
        refusal,
        true);
  }

  /** Gives back the attempt's in-flight claim (call once; a claim not held is a no-op). */
  public void complete(Attempt a) {
    AttemptStore s = store;
    String key = a.claimKey();
    if (s == null || key == null) {
      return;
    }
    try {
      var unused = s.complete(key, a.owner(), a.replayMillis());
    } catch (RuntimeException e) {
      // the claim expires after duplicates.maxInFlight
    }
  }

  /** Remembers a refusal with a Retry-After, so the attempt that follows is early or honoured. */
  public void remember(
      String pool, String tenant, @Nullable String operationId, Reason reason, long raSeconds) {
    remember(pool, tenant, AttemptSignals.NONE, operationId, reason, raSeconds);
  }

  /**
   * As above, for the client of the anonymous tenant that {@code signals} name ({@link #check}).
   */
  public void remember(
      String pool,
      String tenant,
      AttemptSignals signals,
      @Nullable String operationId,
      Reason reason,
      long raSeconds) {
    AttemptStore s = store;
    if (s == null || raSeconds <= 0) {
      return;
    }
    String op = operationId == null || operationId.isEmpty() ? null : operationId;
    try {
      var unused =
          s.remember(
              RetryKeys.refusal(namespace, pool, tenant, client(tenant, signals), op),
              raSeconds,
              reason.code(),
              raSeconds * 1000 + Math.max(1, policy.window().toMillis()));
    } catch (RuntimeException e) {
      // an unremembered refusal makes its retry "unknown", nothing worse
    }
  }
}
