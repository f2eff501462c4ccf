package io.sluice.bench;

import io.sluice.harness.Workload;
import io.sluice.upstream.SimulatedLlmUpstream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * One benchmark scenario: the workload, the simulated upstream, and the two Sluice policies it runs
 * (queue-hold, and the plain concurrency cap baseline). The third system, no admission, needs no
 * policy.
 *
 * @param name command-line name
 * @param title one-line description
 * @param workload arrivals, tenants and classes
 * @param upstream the simulated provider
 * @param classesYaml the {@code classes:} block of the queue-hold policy (indented 2)
 * @param poolCapacity work units in flight for the queue-hold policy
 * @param holdMillis Envoy's {@code max_message_timeout} (pool and emulator)
 */
public record Scenario(
    String name,
    String title,
    Workload workload,
    SimulatedLlmUpstream.Settings upstream,
    String classesYaml,
    long poolCapacity,
    long holdMillis) {

  /** K = 16 batch slots, 0.2 ms prefill per prompt token, 10 ms per completion token. */
  public static final SimulatedLlmUpstream.Settings UPSTREAM =
      new SimulatedLlmUpstream.Settings(
          16, Duration.ofNanos(200_000), Duration.ofMillis(10), 64, 4096, 4);

  static final Duration DEADLINE = Duration.ofSeconds(8);

  /** Chat: 300–700 prompt tokens, 40–160 answer tokens (max_tokens 160), deadline 8 s. */
  static Workload.RequestClass chat(String name, String sluiceClass, double share) {
    return Workload.RequestClass.of(
        name,
        sluiceClass,
        "/v1/chat/completions",
        share,
        300,
        700,
        40,
        160,
        DEADLINE,
        Duration.ofSeconds(2));
  }

  static final String ONE_CLASS =
      """
        interactive: {rank: 0, reservedShare: 1.0, borrow: true, deadline: 8s, maxQueueWait: 2s,
                      defaultOutputTokens: 256, maxOutputTokens: 4096}
      """;

  /** Work of a mean chat request as Sluice counts it: ~500 prompt + 160 reserved output. */
  static final long CHAT_WORK = 660;

  static List<Workload.Phase> steps(double capacity, double... multiples) {
    return stepsOf(Duration.ofSeconds(5), capacity, multiples);
  }

  static List<Workload.Phase> stepsOf(Duration each, double capacity, double... multiples) {
    List<Workload.Phase> phases = new ArrayList<>();
    for (double m : multiples) {
      phases.add(new Workload.Phase(String.format(Locale.ROOT, "%.1fx", m), each, m * capacity));
    }
    return phases;
  }

  static Workload workload(
      List<Workload.RequestClass> classes,
      List<Workload.Tenant> tenants,
      List<Workload.Phase> phases,
      double cancelFraction) {
    return Workload.of(
        classes,
        tenants,
        phases,
        cancelFraction,
        Duration.ofMillis(200),
        Duration.ofSeconds(3),
        2,
        DEADLINE.plusSeconds(1),
        42);
  }

  static double capacity(List<Workload.RequestClass> classes) {
    Workload probe =
        workload(
            classes,
            List.of(new Workload.Tenant("t", 1)),
            List.of(new Workload.Phase("p", Duration.ofSeconds(1), 1)),
            0);
    return io.sluice.harness.LoadGenerator.capacityPerSecond(probe, UPSTREAM);
  }

  /** The five base scenarios, at their default durations. */
  public static List<Scenario> all() {
    List<Scenario> all = new ArrayList<>();
    List<Workload.Tenant> four =
        List.of(
            new Workload.Tenant("acme", 1),
            new Workload.Tenant("globex", 1),
            new Workload.Tenant("initech", 1),
            new Workload.Tenant("umbrella", 1));
    long chatCapacity = UPSTREAM.batchSlots() * CHAT_WORK;

    // 1. stepped load
    List<Workload.RequestClass> chat = List.of(chat("interactive", "interactive", 1));
    double cap = capacity(chat);
    all.add(
        new Scenario(
            "stepped",
            "stepped load 0.5x -> 4x of the upstream's capacity",
            workload(chat, four, steps(cap, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0), 0),
            UPSTREAM,
            ONE_CLASS,
            chatCapacity,
            3000));

    // 2. one pool, three classes: interactive (work weight 1), documents (4), evaluation (2)
    List<Workload.RequestClass> mix =
        List.of(
            chat("interactive", "interactive", 0.5),
            Workload.RequestClass.of(
                "documents",
                "documents",
                "/v1/chat/completions",
                0.25,
                1200,
                2800,
                160,
                640,
                DEADLINE,
                Duration.ofSeconds(4)),
            Workload.RequestClass.of(
                "evaluation",
                "evaluation",
                "/v1/chat/completions",
                0.25,
                600,
                1400,
                80,
                320,
                Duration.ofSeconds(60),
                Duration.ofSeconds(30)));
    double mixCap = capacity(mix);
    String mixClasses =
        """
          interactive: {rank: 0, reservedShare: 0.7, lendableShare: 0.5, borrow: true,
                        deadline: 8s, maxQueueWait: 2s, defaultOutputTokens: 256,
                        maxOutputTokens: 4096}
          documents:   {rank: 1, reservedShare: 0.2, borrow: true, deadline: 8s, maxQueueWait: 2s,
                        defaultOutputTokens: 640, maxOutputTokens: 4096}
          evaluation:  {rank: 2, reservedShare: 0.1, borrow: true, deadline: 60s, maxQueueWait: 30s,
                        defaultOutputTokens: 320, maxOutputTokens: 4096}
        """;
    // mean work: 0.5*660 + 0.25*(2000+640) + 0.25*(1000+320) = 1320 per request
    all.add(
        new Scenario(
            "classes",
            "one pool: interactive (w1), documents (w4), evaluation (w2) at 2x; 70% reserved"
                + " for interactive",
            workload(mix, four, stepsOf(Duration.ofSeconds(20), mixCap, 2.0), 0),
            UPSTREAM,
            mixClasses,
            UPSTREAM.batchSlots() * 1320L,
            10000));

    // 3. noisy tenant: 10x the share of each well-behaved tenant, total 2.6x capacity
    List<Workload.Tenant> noisy =
        List.of(
            new Workload.Tenant("noisy", 10),
            new Workload.Tenant("acme", 1),
            new Workload.Tenant("globex", 1),
            new Workload.Tenant("initech", 1));
    all.add(
        new Scenario(
            "noisy",
            "a noisy tenant sending 10x the traffic of each of three well-behaved tenants",
            workload(chat, noisy, stepsOf(Duration.ofSeconds(20), cap, 2.6), 0),
            UPSTREAM,
            ONE_CLASS.replace("maxQueueWait: 2s,", "maxQueueWait: 2s, queue: {tenantShare: 0.25},"),
            chatCapacity,
            3000));

    // 4. cancellations: 30% of clients disconnect 0.2–3 s after arrival, at 2x
    all.add(
        new Scenario(
            "cancel",
            "30% of clients disconnect 0.2-3 s after arrival (queued or mid-stream), at 2x",
            workload(chat, four, stepsOf(Duration.ofSeconds(20), cap, 2.0), 0.3),
            UPSTREAM,
            ONE_CLASS,
            chatCapacity,
            3000));

    // 5. spike
    List<Workload.Phase> spike = new ArrayList<>();
    spike.add(new Workload.Phase("before", Duration.ofSeconds(6), 0.8 * cap));
    spike.add(new Workload.Phase("spike", Duration.ofSeconds(10), 2.4 * cap));
    spike.add(new Workload.Phase("after", Duration.ofSeconds(10), 0.8 * cap));
    all.add(
        new Scenario(
            "spike",
            "0.8x, then a 2.4x spike for 10 s, then 0.8x (recovery)",
            workload(chat, four, spike, 0),
            UPSTREAM,
            ONE_CLASS,
            chatCapacity,
            3000));
    return all;
  }

  public static Scenario named(String name) {
    return all().stream()
        .filter(s -> s.name().equals(name))
        .findFirst()
        .orElseThrow(
            () ->
                new IllegalArgumentException(
                    "scenario: "
                        + name
                        + " (expected: one of "
                        + all().stream().map(Scenario::name).toList()
                        + ")"));
  }

  /** The same scenario with its arrival phases scaled by {@code factor}. */
  public Scenario scaled(double factor) {
    return new Scenario(
        name, title, workload.scaled(factor), upstream, classesYaml, poolCapacity, holdMillis);
  }

  /** Offered load as a multiple of the upstream's capacity, per phase. */
  public double capacityPerSecond() {
    return io.sluice.harness.LoadGenerator.capacityPerSecond(workload, upstream);
  }

  /** Sluice with queue-hold: work-unit capacity, at most K requests, hold up to holdMillis. */
  public String queueHoldYaml() {
    return Policies.policy(
        poolCapacity, upstream.batchSlots(), holdMillis, classesYaml, defaultClass());
  }

  /** The baseline: a plain cap of K concurrent requests, no queue, work not counted. */
  public String concurrencyCapYaml() {
    return Policies.policy(
        1_000_000_000_000L,
        upstream.batchSlots(),
        0,
        classesYaml.replaceAll("maxQueueWait: \\d+s", "maxQueueWait: 0s"),
        defaultClass());
  }

  private @Nullable String defaultClass() {
    return workload.classes().get(0).sluiceClass();
  }
}
