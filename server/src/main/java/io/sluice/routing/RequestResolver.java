package io.sluice.routing;

import io.sluice.config.SluiceConfig;
import io.sluice.config.SluiceConfig.Signal;
import io.sluice.config.SluiceConfig.Source;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.FanOutPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import io.sluice.core.quota.WorkflowBudget;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Maps a request to (route, pool, class, format, tenant, deadline) using trusted inputs only. A
 * client header that claims a class or priority is never read unless the operator lists it under
 * {@code signals}. Trusted {@code class}/{@code pool} signals override the matched route's values;
 * a {@code class} signal may also carry an InferenceObjective name the {@code llmD} section maps to
 * a class; an unknown name in a signal is ignored in favour of the route's.
 */
public final class RequestResolver {
  // The built-in signals' places in Signal.BUILT_IN, which is how `sources` holds them
  private static final int ROUTE = builtIn(Signal.ROUTE);
  private static final int POOL = builtIn(Signal.POOL);
  private static final int CLASS = builtIn(Signal.CLASS);
  private static final int FORMAT = builtIn(Signal.FORMAT);
  private static final int TENANT = builtIn(Signal.TENANT);
  private static final int DEADLINE_MS = builtIn(Signal.DEADLINE_MS);
  private static final int MAX_MESSAGE_TIMEOUT_MS = builtIn(Signal.MAX_MESSAGE_TIMEOUT_MS);
  private static final int OPERATION_ID = builtIn(Signal.OPERATION_ID);
  private static final int FANOUT = builtIn(Signal.FANOUT);
  private static final int WORKFLOW = builtIn(Signal.WORKFLOW);
  private static final int NO_DEGRADE = builtIn(Signal.NO_DEGRADE);

  private final SluiceConfig config;
  // every signal's sources, the built-in ones first (in Signal.BUILT_IN's order), then the
  // registered ones, laid out for the per-request reads by index, without map lookups
  private final SignalReads reads;
  // Looked up once per config, not per request: the route rules with their pool and class (null
  // when the config names one that does not exist), the unmatched route's, and the tenants.
  private final SluiceConfig.RouteRule[] rules;
  private final @Nullable PoolPolicy[] rulePools;
  private final @Nullable ClassPolicy[] ruleClasses;
  private final @Nullable PoolPolicy unmatchedPool;
  private final @Nullable ClassPolicy unmatchedClass;
  private final java.util.Set<String> shadowPools = new java.util.HashSet<>();
  private final Tenant anonymous;
  private final java.util.Map<String, Tenant> knownTenants = new java.util.HashMap<>();
  // the last unknown tenant resolved, of the unknown tier (at first one of no id, which no request
  // has: an empty tenant is anonymous); a request of the same tenant reuses it instead of a new
  // Tenant. A racy write is benign (a record of final fields).
  private Tenant lastUnknown;
  // what the registered features read per request (ConfigSection.signals), worked out once per
  // snapshot: the operation id, and the rest (built in or registered) into the request's Signals,
  // by their index in `sources`; none: nothing is read or allocated for them
  private final boolean featuresReadOperationId;
  private final int[] featureSignals;
  private final String[] featureSignalKeys;
  // per feature signal: the place in featureSignals of the signal it is read beside, or -1
  private final int[] featureSignalBeside;
  // per feature signal: read only for the decision record (not while no record is written)
  private final boolean[] featureSignalForRecord;
  // the same keys, every value absent: what most requests carry (no array of values per request)
  private final io.sluice.core.session.Signals featureSignalsAbsent;
  // InferenceObjective names (a trusted class signal's value) to class names: llmD section
  private final io.sluice.config.LlmdInterop objectives;

  public RequestResolver(SluiceConfig config) {
    this.config = config;
    this.objectives = config.section(io.sluice.config.LlmdSection.SECTION);
    List<Signal> all = new java.util.ArrayList<>(Signal.BUILT_IN);
    for (Signal s : config.signals().keySet()) {
      if (!Signal.BUILT_IN.contains(s)) {
        all.add(s);
      }
    }
    Source[][] sources = new Source[all.size()][];
    for (int i = 0; i < all.size(); i++) {
      List<Source> l = config.signals().get(all.get(i));
      sources[i] = l == null ? new Source[0] : l.toArray(Source[]::new);
    }
    this.reads = new SignalReads(sources);
    java.util.Set<String> asked = config.sections().signals();
    this.featuresReadOperationId = asked.contains(Signal.OPERATION_ID.key());
    List<Integer> read = new java.util.ArrayList<>();
    for (int i = 0; i < all.size(); i++) {
      if (i != OPERATION_ID && asked.contains(all.get(i).key())) {
        read.add(i);
      }
    }
    this.featureSignals = read.stream().mapToInt(Integer::intValue).toArray();
    this.featureSignalKeys = read.stream().map(i -> all.get(i).key()).toArray(String[]::new);
    java.util.Map<String, String> beside = config.sections().signalsBeside();
    List<String> keys = List.of(featureSignalKeys);
    this.featureSignalBeside = new int[featureSignalKeys.length];
    this.featureSignalForRecord = new boolean[featureSignalKeys.length];
    java.util.Set<String> forRecord = config.sections().recordSignals();
    for (int i = 0; i < featureSignalKeys.length; i++) {
      featureSignalForRecord[i] = forRecord.contains(featureSignalKeys[i]);
      int needed = keys.indexOf(beside.getOrDefault(featureSignalKeys[i], ""));
      featureSignalBeside[i] = needed < i ? needed : -1; // read after it, or ungated
    }
    this.featureSignalsAbsent =
        io.sluice.core.session.Signals.of(featureSignalKeys, new String[featureSignalKeys.length]);
    rules = config.routes().toArray(SluiceConfig.RouteRule[]::new);
    rulePools = new PoolPolicy[rules.length];
    ruleClasses = new ClassPolicy[rules.length];
    for (int i = 0; i < rules.length; i++) {
      rulePools[i] = config.pools().get(rules[i].pool());
      ruleClasses[i] = config.classes().get(rules[i].requestClass());
    }
    unmatchedPool = config.pools().get(config.unmatched().pool());
    config
        .poolModes()
        .forEach(
            (name, mode) -> {
              if (mode == SluiceConfig.Mode.SHADOW) {
                shadowPools.add(name);
              }
            });
    unmatchedClass = config.classes().get(config.unmatched().requestClass());
    SluiceConfig.Tenants tc = config.tenants();
    anonymous = new Tenant(Tenant.ANONYMOUS, tier(tc.anonymousTier()));
    lastUnknown = new Tenant("", tier(tc.unknownTier()));
    tc.known().forEach((id, tier) -> knownTenants.put(id, new Tenant(id, tier(tier))));
  }

  /** Every request header a declared signal may read (lower case, as Envoy sends them). */
  public java.util.Set<String> headerNames() {
    return new java.util.LinkedHashSet<>(reads.headerNames());
  }

  /**
   * Every gRPC metadata key a declared signal may read, in the order {@link
   * SignalSource#metadata(int, String)}'s slots count them.
   */
  public List<String> metadataNames() {
    return reads.metadataNames();
  }

  public ResolvedRequest resolve(SignalSource in, long nowNanos) {
    return resolve(in, nowNanos, true);
  }

  /**
   * @param withOperationId whether decision records are written: the operation id, and the signals
   *     a feature reads only for the record ({@code ConfigSection.recordSignals}), are read only
   *     then (only decision records carry them; the header value is not decoded when nothing will
   *     write it)
   */
  public ResolvedRequest resolve(SignalSource in, long nowNanos, boolean withOperationId) {
    String routeSignal = read(ROUTE, in);
    String path = in.path();
    int ruleIndex = match(routeSignal, path);
    SluiceConfig.RouteRule rule = ruleIndex < 0 ? null : rules[ruleIndex];
    String routeName;
    PoolPolicy pool;
    ClassPolicy cls;
    RequestFormat format;
    SluiceConfig.EstimateFrom estimateFrom;
    if (rule != null) {
      routeName = rule.name();
      pool = rulePools[ruleIndex];
      cls = ruleClasses[ruleIndex];
      format = rule.format();
      estimateFrom = rule.estimateFrom();
    } else {
      SluiceConfig.Unmatched u = config.unmatched();
      routeName = "unmatched";
      pool = unmatchedPool;
      cls = unmatchedClass;
      format = u.format();
      estimateFrom = u.estimateFrom();
    }
    String poolSignal = read(POOL, in);
    if (poolSignal != null && config.pools().containsKey(poolSignal)) {
      pool = config.pools().get(poolSignal);
    }
    String classSignal = read(CLASS, in);
    if (classSignal != null) {
      ClassPolicy signalled = config.classes().get(classSignal);
      if (signalled == null) { // an InferenceObjective name the llmD section maps to a class
        String mapped = objectives.classOf(classSignal);
        signalled = mapped == null ? null : config.classes().get(mapped);
      }
      if (signalled != null) {
        cls = signalled;
      }
    }
    String formatSignal = read(FORMAT, in);
    if (formatSignal != null) {
      try {
        format = RequestFormat.fromConfigName(formatSignal);
      } catch (IllegalArgumentException ignored) {
        // keep the route's format
      }
    }
    if (format == RequestFormat.AUTO && path != null) {
      format = RequestFormat.fromPath(path);
    }
    boolean routeKnown = rule != null || poolSignal != null || classSignal != null;

    Reason reject = null;
    String rejectMessage = null;
    if (!routeKnown && config.unmatched().reject()) {
      reject = Reason.UNKNOWN_ROUTE;
      rejectMessage = "no route matches this request";
    }
    if (pool == null || cls == null) {
      reject = Reason.UNKNOWN_ROUTE;
      rejectMessage = "route names a pool or class that does not exist";
      pool = config.pools().values().iterator().next();
      cls = config.classes().values().iterator().next();
    }

    String tenantId = read(TENANT, in);
    Tenant tenant;
    if (tenantId == null || tenantId.isEmpty()) {
      tenant = anonymous;
    } else {
      // none known (as configs mostly have): no hash of the request's new String
      tenant = knownTenants.isEmpty() ? null : knownTenants.get(tenantId);
      if (tenant == null) {
        tenant = unknown(tenantId);
        if (config.tenants().unknown() == SluiceConfig.UnknownAction.REJECT && reject == null) {
          reject = Reason.UNKNOWN_TENANT;
          rejectMessage = "tenant is not known to this gateway";
        }
      }
    }

    long classDeadlineNanos = cls.deadline().toNanos();
    long deadlineNanos = nowNanos + classDeadlineNanos;
    String deadlineMs = read(DEADLINE_MS, in);
    if (deadlineMs != null) {
      try {
        long ms = Long.parseLong(deadlineMs.trim());
        // A client value may only tighten the class's deadline, never extend it; compared in ms so
        // a huge value cannot overflow into a short (or past) deadline.
        if (ms > 0 && ms < classDeadlineNanos / 1_000_000L) {
          deadlineNanos = nowNanos + ms * 1_000_000L;
        }
      } catch (NumberFormatException ignored) {
        // not a number: the class default stands
      }
    }
    long mmt = pool.maxMessageTimeout().toMillis();
    String mmtSignal = read(MAX_MESSAGE_TIMEOUT_MS, in);
    if (mmtSignal != null) {
      try {
        mmt = Math.max(0, Math.min(3_600_000L, Long.parseLong(mmtSignal.trim())));
      } catch (NumberFormatException ignored) {
        // keep the pool's value
      }
    }
    return new ResolvedRequest(
        routeName,
        pool,
        cls,
        format,
        estimateFrom,
        tenant,
        deadlineNanos,
        withOperationId || featuresReadOperationId ? read(OPERATION_ID, in) : null,
        mmt,
        reject,
        rejectMessage,
        shadow(rule, pool),
        declaredFanout(read(FANOUT, in)),
        workflow(read(WORKFLOW, in)),
        (rule != null && !rule.degrade()) || truthy(read(NO_DEGRADE, in)),
        featureSignals(in, withOperationId));
  }

  /** An unknown tenant's Tenant (its tier: the unknown tier): the last one when it is the same. */
  private Tenant unknown(String tenantId) {
    Tenant last = lastUnknown;
    if (last.id().equals(tenantId)) {
      return last;
    }
    Tenant t = new Tenant(tenantId, last.tier());
    lastUnknown = t;
    return t;
  }

  /** The signals the registered features read, from their trusted sources ({@code Signals}). */
  private io.sluice.core.session.Signals featureSignals(SignalSource in, boolean withRecords) {
    @Nullable String[] values = null; // made when the first signal is present
    for (int i = 0; i < featureSignals.length; i++) {
      if (!withRecords && featureSignalForRecord[i]) {
        continue; // no decision record is written: nothing would read it
      }
      int beside = featureSignalBeside[i];
      if (beside >= 0 && (values == null || values[beside] == null)) {
        continue; // read only beside a signal this request does not carry
      }
      String v = read(featureSignals[i], in);
      if (v != null) {
        if (values == null) {
          values = new String[featureSignals.length];
        }
        values[i] = v;
      }
    }
    return values == null
        ? featureSignalsAbsent
        : io.sluice.core.session.Signals.of(featureSignalKeys, values);
  }

  /** A signal's yes: {@code true}, {@code 1} or {@code yes} (any case); anything else is no. */
  static boolean truthy(@Nullable String value) {
    if (value == null) {
      return false;
    }
    String v = value.trim().toLowerCase(java.util.Locale.ROOT);
    return v.equals("true") || v.equals("1") || v.equals("yes");
  }

  /**
   * The {@code fanout} signal: a non-negative integer, at most {@link
   * FanOutPolicy#MAX_DECLARED_CALLS}; anything else (not a number, negative) is ignored (0).
   */
  static int declaredFanout(@Nullable String value) {
    if (value == null) {
      return 0;
    }
    String v = value.trim();
    if (v.isEmpty() || v.length() > 19) {
      return v.length() > 19 && v.chars().allMatch(Character::isDigit)
          ? FanOutPolicy.MAX_DECLARED_CALLS
          : 0;
    }
    try {
      long n = Long.parseLong(v);
      return n < 0 ? 0 : (int) Math.min(FanOutPolicy.MAX_DECLARED_CALLS, n);
    } catch (NumberFormatException ignored) {
      return 0;
    }
  }

  /** The {@code workflow} signal, cut to {@link WorkflowBudget#MAX_ID_CHARS}; null when absent. */
  static @Nullable String workflow(@Nullable String value) {
    return value == null || value.isEmpty() ? null : WorkflowBudget.normalize(value);
  }

  /** The route's own mode if it has one, else its pool's (a route may go either way). */
  private boolean shadow(SluiceConfig.@Nullable RouteRule rule, PoolPolicy pool) {
    if (rule != null && rule.mode() != null) {
      return rule.mode() == SluiceConfig.Mode.SHADOW;
    }
    return !shadowPools.isEmpty() && shadowPools.contains(pool.name());
  }

  private TierPolicy tier(String name) {
    TierPolicy t = config.tiers().get(name);
    return t != null ? t : config.tiers().values().iterator().next();
  }

  /** The index of the first rule that matches, or -1. */
  private int match(@Nullable String routeSignal, @Nullable String path) {
    for (int i = 0; i < rules.length; i++) {
      SluiceConfig.RouteRule r = rules[i];
      if (r.matchRoute() != null && !r.matchRoute().equals(routeSignal)) {
        continue;
      }
      if (r.matchPath() != null && !r.matchPath().equals(path)) {
        continue;
      }
      if (r.matchPathPrefix() != null && (path == null || !prefixed(path, r.matchPathPrefix()))) {
        continue;
      }
      return i;
    }
    return -1;
  }

  /**
   * {@code path.startsWith(prefix)}; a path as long as the prefix (the usual request: no more than
   * the route's path) is compared by {@link String#equals}, an intrinsic, not char by char.
   */
  static boolean prefixed(String path, String prefix) {
    return path.length() == prefix.length() ? path.equals(prefix) : path.startsWith(prefix);
  }

  /** The place of a built-in signal in {@code sources}. */
  private static int builtIn(Signal s) {
    return Signal.BUILT_IN.indexOf(s);
  }

  /** First present value among the signal's declared sources ({@link #builtIn}). */
  private @Nullable String read(int signal, SignalSource in) {
    return reads.read(signal, in);
  }
}
