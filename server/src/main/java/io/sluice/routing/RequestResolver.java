package io.sluice.routing;

import io.sluice.config.SluiceConfig;
import io.sluice.config.SluiceConfig.Signal;
import io.sluice.config.SluiceConfig.Source;
import io.sluice.core.admission.Reason;
import io.sluice.core.estimate.RequestFormat;
import io.sluice.core.policy.ClassPolicy;
import io.sluice.core.policy.PoolPolicy;
import io.sluice.core.policy.Tenant;
import io.sluice.core.policy.TierPolicy;
import java.util.List;

/**
 * Maps a request to (route, pool, class, format, tenant, deadline) using trusted inputs only. A
 * client header that claims a class or priority is never read unless the operator lists it under
 * {@code signals}. Trusted {@code class}/{@code pool} signals override the matched route's values;
 * an unknown name in a signal is ignored in favour of the route's.
 */
public final class RequestResolver {
  private final SluiceConfig config;
  private final Source[][] sources; // by Signal ordinal: read per request without map lookups

  public RequestResolver(SluiceConfig config) {
    this.config = config;
    Signal[] all = Signal.values();
    this.sources = new Source[all.length][];
    for (Signal s : all) {
      List<Source> l = config.signals().get(s);
      sources[s.ordinal()] = l == null ? new Source[0] : l.toArray(Source[]::new);
    }
  }

  /** Every request header a declared signal may read (lower case, as Envoy sends them). */
  public java.util.Set<String> headerNames() {
    java.util.Set<String> names = new java.util.LinkedHashSet<>();
    for (Source[] list : sources) {
      for (Source s : list) {
        if (s instanceof Source.Header h) {
          names.add(h.header());
        }
      }
    }
    return names;
  }

  public ResolvedRequest resolve(SignalSource in, long nowNanos) {
    return resolve(in, nowNanos, true);
  }

  /**
   * @param withOperationId whether to read the operation id (only decision records carry it; the
   *     header value is not decoded when nothing will write it)
   */
  public ResolvedRequest resolve(SignalSource in, long nowNanos, boolean withOperationId) {
    String routeSignal = read(Signal.ROUTE, in);
    String path = in.path();
    SluiceConfig.RouteRule rule = match(routeSignal, path);
    String routeName;
    String poolName;
    String className;
    RequestFormat format;
    SluiceConfig.EstimateFrom estimateFrom;
    if (rule != null) {
      routeName = rule.name();
      poolName = rule.pool();
      className = rule.requestClass();
      format = rule.format();
      estimateFrom = rule.estimateFrom();
    } else {
      SluiceConfig.Unmatched u = config.unmatched();
      routeName = "unmatched";
      poolName = u.pool();
      className = u.requestClass();
      format = u.format();
      estimateFrom = u.estimateFrom();
    }
    String poolSignal = read(Signal.POOL, in);
    if (poolSignal != null && config.pools().containsKey(poolSignal)) {
      poolName = poolSignal;
    }
    String classSignal = read(Signal.CLASS, in);
    if (classSignal != null && config.classes().containsKey(classSignal)) {
      className = classSignal;
    }
    String formatSignal = read(Signal.FORMAT, in);
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
    PoolPolicy pool = config.pools().get(poolName);
    ClassPolicy cls = config.classes().get(className);
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

    String tenantId = read(Signal.TENANT, in);
    Tenant tenant;
    SluiceConfig.Tenants tc = config.tenants();
    if (tenantId == null || tenantId.isEmpty()) {
      tenant = new Tenant(Tenant.ANONYMOUS, tier(tc.anonymousTier()));
    } else if (tc.known().containsKey(tenantId)) {
      tenant = new Tenant(tenantId, tier(tc.known().get(tenantId)));
    } else {
      tenant = new Tenant(tenantId, tier(tc.unknownTier()));
      if (tc.unknown() == SluiceConfig.UnknownAction.REJECT && reject == null) {
        reject = Reason.UNKNOWN_TENANT;
        rejectMessage = "tenant is not known to this gateway";
      }
    }

    long deadlineNanos = nowNanos + cls.deadline().toNanos();
    String deadlineMs = read(Signal.DEADLINE_MS, in);
    if (deadlineMs != null) {
      try {
        long ms = Long.parseLong(deadlineMs.trim());
        if (ms > 0 && ms * 1_000_000L < cls.deadline().toNanos()) {
          deadlineNanos = nowNanos + ms * 1_000_000L; // a header may only tighten
        }
      } catch (NumberFormatException ignored) {
        // not a number: the class default stands
      }
    }
    long mmt = pool.maxMessageTimeout().toMillis();
    String mmtSignal = read(Signal.MAX_MESSAGE_TIMEOUT_MS, in);
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
        withOperationId ? read(Signal.OPERATION_ID, in) : null,
        mmt,
        reject,
        rejectMessage);
  }

  private TierPolicy tier(String name) {
    TierPolicy t = config.tiers().get(name);
    return t != null ? t : config.tiers().values().iterator().next();
  }

  private SluiceConfig.RouteRule match(String routeSignal, String path) {
    for (SluiceConfig.RouteRule r : config.routes()) {
      if (r.matchRoute() != null && !r.matchRoute().equals(routeSignal)) {
        continue;
      }
      if (r.matchPath() != null && !r.matchPath().equals(path)) {
        continue;
      }
      if (r.matchPathPrefix() != null && (path == null || !path.startsWith(r.matchPathPrefix()))) {
        continue;
      }
      return r;
    }
    return null;
  }

  /** First present value among the signal's declared sources. */
  String read(Signal signal, SignalSource in) {
    for (Source s : sources[signal.ordinal()]) {
      String v;
      if (s instanceof Source.Metadata m) {
        v = in.metadata(m.metadata());
      } else if (s instanceof Source.Header h) {
        v = in.header(h.header());
      } else if (s instanceof Source.DynamicMetadata d) {
        v = in.dynamicMetadata(d.namespace(), d.path());
      } else {
        v = in.attribute(((Source.Attribute) s).attribute());
      }
      if (v != null && !v.isEmpty()) {
        return v;
      }
    }
    return null;
  }
}
