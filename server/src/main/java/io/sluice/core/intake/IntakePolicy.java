package io.sluice.core.intake;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The {@code intake} section (docs/configuration.md, "Background intake").
 *
 * @param enabled whether background requests are accepted into the durable queue at all
 * @param classes the classes whose background requests are accepted (by name)
 * @param routes the routes whose background requests are accepted (by name), beside {@code classes}
 * @param statusPath the path prefix of the operation routes: {@code GET <statusPath><id>} and
 *     {@code POST <statusPath><id>/cancel} are answered from the store
 * @param freshness how long a job may wait in the queue: past it, it ends {@code expired} instead
 *     of running stale
 * @param maxJobsPerTenant a tenant's jobs waiting at most (more: {@code intake_backlog_full})
 * @param maxWorkPerTenant the work units of a tenant's waiting jobs at most
 * @param maxRequestBytes the largest request body accepted into the queue ({@code body_too_large})
 * @param retention how long a job's final status (and result) stays readable
 * @param maxJobs the in-memory store's bound on jobs kept (one replica, tests)
 * @param maxResultBytes the largest upstream answer kept as a job's result (larger: the job ends
 *     {@code failed}, {@code result_too_large}; never truncated)
 * @param dispatch how accepted jobs are run ({@link DispatchPolicy})
 * @param whenLate per class (by name): what happens to a request the pool cannot start in time
 *     ({@link WhenLate}; a class not named: {@link WhenLate#REFUSE})
 */
public record IntakePolicy(
    boolean enabled,
    Set<String> classes,
    Set<String> routes,
    String statusPath,
    Duration freshness,
    int maxJobsPerTenant,
    long maxWorkPerTenant,
    int maxRequestBytes,
    Duration retention,
    int maxJobs,
    int maxResultBytes,
    DispatchPolicy dispatch,
    Map<String, WhenLate> whenLate) {
  public IntakePolicy {
    Objects.requireNonNull(dispatch, "dispatch");
    whenLate = Map.copyOf(whenLate);
    classes = Set.copyOf(classes);
    routes = Set.copyOf(routes);
    Objects.requireNonNull(statusPath, "statusPath");
    Objects.requireNonNull(freshness, "freshness");
    Objects.requireNonNull(retention, "retention");
  }

  public static final IntakePolicy DEFAULTS =
      new IntakePolicy(
          false,
          Set.of(),
          Set.of(),
          "/v1/responses/",
          Duration.ofHours(1),
          1000,
          10_000_000L,
          1 << 20,
          Duration.ofHours(24),
          100_000,
          4 << 20,
          DispatchPolicy.OFF,
          Map.of());

  /** Whether a request of {@code className} on {@code route} may be accepted for later. */
  public boolean covers(String className, String route) {
    return enabled && (classes.contains(className) || routes.contains(route));
  }

  /**
   * Whether a request of {@code className} the pool cannot start in time is accepted for later
   * ({@code whenLate: accept}).
   */
  public boolean acceptsLate(String className) {
    return enabled && whenLate.get(className) == WhenLate.ACCEPT;
  }

  /**
   * Whether jobs of {@code className} are what intake takes in, the classes a dispatcher looks for
   * room for: {@code intake.classes} and the classes {@code whenLate} accepts; when intake names
   * neither (routes only), any class.
   */
  public boolean dispatches(String className) {
    if (classes.isEmpty() && !whenLate.containsValue(WhenLate.ACCEPT)) {
      return true; // routes only: a route's job may be of any class
    }
    return classes.contains(className) || whenLate.get(className) == WhenLate.ACCEPT;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Tests and tools: the defaults, changed field by field. */
  public static final class Builder {
    private boolean enabled = true;
    private Set<String> classes = Set.of("batch");
    private Set<String> routes = Set.of();
    private String statusPath = DEFAULTS.statusPath;
    private Duration freshness = DEFAULTS.freshness;
    private int maxJobsPerTenant = DEFAULTS.maxJobsPerTenant;
    private long maxWorkPerTenant = DEFAULTS.maxWorkPerTenant;
    private int maxRequestBytes = DEFAULTS.maxRequestBytes;
    private Duration retention = DEFAULTS.retention;
    private int maxJobs = DEFAULTS.maxJobs;
    private int maxResultBytes = DEFAULTS.maxResultBytes;
    private DispatchPolicy dispatch = DEFAULTS.dispatch;
    private Map<String, WhenLate> whenLate = DEFAULTS.whenLate;

    public Builder enabled(boolean v) {
      enabled = v;
      return this;
    }

    public Builder classes(Set<String> v) {
      classes = v;
      return this;
    }

    public Builder routes(Set<String> v) {
      routes = v;
      return this;
    }

    public Builder statusPath(String v) {
      statusPath = v;
      return this;
    }

    public Builder freshness(Duration v) {
      freshness = v;
      return this;
    }

    public Builder maxJobsPerTenant(int v) {
      maxJobsPerTenant = v;
      return this;
    }

    public Builder maxWorkPerTenant(long v) {
      maxWorkPerTenant = v;
      return this;
    }

    public Builder maxRequestBytes(int v) {
      maxRequestBytes = v;
      return this;
    }

    public Builder retention(Duration v) {
      retention = v;
      return this;
    }

    public Builder maxJobs(int v) {
      maxJobs = v;
      return this;
    }

    public Builder maxResultBytes(int v) {
      maxResultBytes = v;
      return this;
    }

    public Builder dispatch(DispatchPolicy v) {
      dispatch = v;
      return this;
    }

    public Builder whenLate(Map<String, WhenLate> v) {
      whenLate = v;
      return this;
    }

    public IntakePolicy build() {
      return new IntakePolicy(
          enabled,
          classes,
          routes,
          statusPath,
          freshness,
          maxJobsPerTenant,
          maxWorkPerTenant,
          maxRequestBytes,
          retention,
          maxJobs,
          maxResultBytes,
          dispatch,
          whenLate);
    }
  }
}
