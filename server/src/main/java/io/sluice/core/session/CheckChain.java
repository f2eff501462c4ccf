package io.sluice.core.session;

import io.sluice.core.admission.AdmissionController;
import io.sluice.core.quota.SharedWorkflowBudget;
import io.sluice.core.quota.TenantCaps;
import io.sluice.core.quota.TenantQuotas;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;

/**
 * The pre-decision checks of one runtime snapshot, in their order: built once ({@link #of}), shared
 * by every request of the snapshot: the built-in ones and those the features contribute ({@link
 * AdmissionCheck.Contributed}), by their order. What the snapshot turns off is left out here (a
 * contributed check whose factory answers null, e.g. retry control off; no store shared with other
 * replicas); what depends on the request (its tenant's tier, its workflow) is skipped per request
 * by {@link AdmissionCheck#applies}, without allocating.
 *
 * <p>The built-in order, and when each runs (a feature's check goes in by its order: retry control
 * right after the request rate):
 *
 * <ol>
 *   <li>headers: the tenant's request rate ({@link TenantRateCheck}, {@link #TENANT_RATE});
 *   <li>with the estimate: the tenant's token reservation ({@link TokenReservationCheck}, {@link
 *       #TOKEN_RESERVATION}), its slot across replicas ({@link TenantSlotCheck}, {@link
 *       #TENANT_SLOT}), the workflow's place ({@link WorkflowPlaceCheck}, {@link #WORKFLOW_PLACE});
 *       then the pool decides.
 * </ol>
 */
public final class CheckChain {
  /** The built-in checks' places ({@link AdmissionCheck.Contributed#order}). */
  public static final int TENANT_RATE = 100;

  public static final int TOKEN_RESERVATION = 200;
  public static final int TENANT_SLOT = 300;
  public static final int WORKFLOW_PLACE = 400;

  private final AdmissionCheck<?>[] checks;
  // each check's stage, read once here and not per request (a check's stage is fixed)
  private final AdmissionCheck.Stage[] stages;
  // how each check's applies is asked (GATE_*), chosen once here by its class: one call site per
  // built-in check (a direct call the JIT inlines), none for a check that applies to every request
  private final byte[] gates;

  private static final byte GATE_CALL = 0; // any other check: its applies, through the interface
  private static final byte GATE_ALL = 1; // applies to every request (appliesToAll): no call
  private static final byte GATE_RATE = 2;
  private static final byte GATE_TOKENS = 3;
  private static final byte GATE_SLOT = 4;
  private static final byte GATE_WORKFLOW = 5;

  /** {@code checks} in order, every {@link AdmissionCheck.Stage#HEADERS} one first. */
  CheckChain(List<? extends AdmissionCheck<?>> checks) {
    AdmissionCheck.Stage last = AdmissionCheck.Stage.HEADERS;
    AdmissionCheck.Stage[] stage = new AdmissionCheck.Stage[checks.size()];
    for (int i = 0; i < stage.length; i++) {
      AdmissionCheck<?> c = checks.get(i);
      stage[i] = c.stage();
      if (stage[i].compareTo(last) < 0) {
        throw new IllegalArgumentException("a headers check after an estimate check: " + c);
      }
      last = stage[i];
    }
    this.checks = checks.toArray(new AdmissionCheck<?>[0]);
    this.stages = stage;
    this.gates = new byte[this.checks.length];
    for (int i = 0; i < gates.length; i++) {
      gates[i] = gate(this.checks[i]);
    }
  }

  private static byte gate(AdmissionCheck<?> c) {
    if (c.appliesToAll()) {
      return GATE_ALL;
    }
    // the built-in checks are final classes: the exact class is the check
    Class<?> k = c.getClass();
    return k == TenantRateCheck.class
        ? GATE_RATE
        : k == TokenReservationCheck.class
            ? GATE_TOKENS
            : k == TenantSlotCheck.class
                ? GATE_SLOT
                : k == WorkflowPlaceCheck.class ? GATE_WORKFLOW : GATE_CALL;
  }

  /**
   * Whether the {@code i}th check applies to {@code r} ({@link AdmissionCheck#applies}), asked as
   * chosen when the chain was built: no call for a check that applies to all, a call site of its
   * own for each built-in check, so that one request's way through the chain dispatches through no
   * itable stub (one site for all of them sees every class: megamorphic).
   */
  boolean applies(int i, AdmissionCheck.Request r) {
    AdmissionCheck<?> c = checks[i];
    return switch (gates[i]) {
      case GATE_ALL -> true;
      case GATE_RATE -> ((TenantRateCheck) c).applies(r);
      case GATE_TOKENS -> ((TokenReservationCheck) c).applies(r);
      case GATE_SLOT -> ((TenantSlotCheck) c).applies(r);
      case GATE_WORKFLOW -> ((WorkflowPlaceCheck) c).applies(r);
      default -> c.applies(r);
    };
  }

  /** The checks of a snapshot ({@link Sessions}), in order. */
  static CheckChain of(
      TenantQuotas quotas,
      Clock clock,
      SessionListener listener,
      AdmissionController controller,
      TenantCaps caps,
      SharedWorkflowBudget workflows,
      List<AdmissionCheck.Contributed> contributed) {
    List<Placed> c = new ArrayList<>();
    c.add(new Placed(TENANT_RATE, new TenantRateCheck(quotas, clock, listener)));
    c.add(new Placed(TOKEN_RESERVATION, new TokenReservationCheck(quotas, clock, listener)));
    if (caps != TenantCaps.none()) { // no store shared with other replicas: never applies
      c.add(new Placed(TENANT_SLOT, new TenantSlotCheck(caps, quotas, controller, listener)));
    }
    c.add(new Placed(WORKFLOW_PLACE, new WorkflowPlaceCheck(workflows, quotas, controller)));
    AdmissionCheck.Context snapshot = new AdmissionCheck.Context(controller, listener, clock);
    for (AdmissionCheck.Contributed k : contributed) {
      AdmissionCheck<?> check = k.factory().create(snapshot);
      if (check != null) { // off in this snapshot: left out
        c.add(new Placed(k.order(), check));
      }
    }
    c.sort(java.util.Comparator.comparingInt(Placed::order)); // stable: equal orders as registered
    List<AdmissionCheck<?>> checks = new ArrayList<>(c.size());
    c.forEach(p -> checks.add(p.check()));
    return new CheckChain(checks);
  }

  private record Placed(int order, AdmissionCheck<?> check) {}

  int size() {
    return checks.length;
  }

  AdmissionCheck<?> get(int i) {
    return checks[i];
  }

  /** The stage of the {@code i}th check, as it was when the chain was built. */
  AdmissionCheck.Stage stage(int i) {
    return stages[i];
  }

  /** The checks, in order (for tests and the admin view). */
  public List<AdmissionCheck<?>> checks() {
    return List.of(checks);
  }
}
