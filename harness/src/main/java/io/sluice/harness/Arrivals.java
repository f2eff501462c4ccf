package io.sluice.harness;

import io.sluice.upstream.SimulatedLlmUpstream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.ToDoubleFunction;

/**
 * A workload's arrivals, drawn from its seed before a run starts (Poisson per phase, class, tenant
 * and sizes by share), the request body each one sends, and how each would end if it were served on
 * arrival at full speed. Public for the bench's virtual-time runs (the same arrivals as a live run
 * of the same workload).
 */
public final class Arrivals {
  private Arrivals() {}

  /**
   * One arrival of a workload, drawn before a run starts, so the same seed gives the same arrivals
   * in every run and in {@link LoadGenerator#wasteIfServedOnArrival}.
   *
   * @param phase index of the arrival phase
   * @param atNanos arrival time since the run started
   * @param cancelAfterNanos when the client disconnects on its own, after arrival ({@link
   *     Long#MAX_VALUE}: it does not)
   */
  public record Arrival(
      int phase,
      long atNanos,
      Workload.RequestClass requestClass,
      Workload.Tenant tenant,
      int promptTokens,
      int outputTokens,
      long cancelAfterNanos,
      int maxTokens) {}

  /**
   * A tenant named {@code class:<name>} sends every request of class {@code <name>} and no other
   * (clients of one application are one tenant); otherwise {@code drawn}.
   */
  private static Workload.Tenant ownTenant(
      Workload w, Workload.RequestClass c, Workload.Tenant drawn) {
    for (Workload.Tenant t : w.tenants()) {
      if (t.name().equals("class:" + c.name())) {
        return t;
      }
    }
    return drawn;
  }

  /** The workload's arrivals, in order: Poisson per phase, class, tenant and sizes by share. */
  public static List<Arrival> arrivals(Workload w) {
    SplittableRandom random = new SplittableRandom(w.seed());
    // max_tokens ranges draw from their own stream, so a workload's arrivals, classes and sizes
    // are the same whatever its clients send as max_tokens (static, range or the answer's length)
    SplittableRandom caps = new SplittableRandom(w.seed() ^ 0x5DEECE66DL);
    double classShares = w.classes().stream().mapToDouble(Workload.RequestClass::share).sum();
    double tenantShares = w.tenants().stream().mapToDouble(Workload.Tenant::share).sum();
    List<Arrival> out = new ArrayList<>();
    long at = 0;
    for (int p = 0; p < w.phases().size(); p++) {
      Workload.Phase phase = w.phases().get(p);
      long end = at + phase.duration().toNanos();
      if (phase.ratePerSecond() > 0) {
        long next = at + exponentialNanos(random, phase.ratePerSecond());
        while (next - end < 0 && out.size() < w.maxArrivals()) {
          Workload.RequestClass c =
              pick(random, w.classes(), Workload.RequestClass::share, classShares);
          Workload.Tenant t = pick(random, w.tenants(), Workload.Tenant::share, tenantShares);
          t = ownTenant(w, c, t); // after the draw: other workloads' arrivals stay the same
          int prompt = uniform(random, c.promptTokensMin(), c.promptTokensMax());
          int output = uniform(random, c.outputTokensMin(), c.outputTokensMax());
          long cancelAfter = Long.MAX_VALUE;
          if (w.cancelFraction() > 0 && random.nextDouble() < w.cancelFraction()) {
            long lo = w.cancelMin().toNanos();
            long hi = Math.max(lo, w.cancelMax().toNanos());
            cancelAfter = lo + (long) (random.nextDouble() * (hi - lo));
          }
          int maxTokens = c.outputTokensMax();
          if (c.maxTokensMax() == Workload.RequestClass.ORACLE) {
            maxTokens = output;
          } else if (c.maxTokensMax() > 0) { // own stream: the arrivals stay the same
            maxTokens = uniform(caps, c.maxTokensMin(), c.maxTokensMax());
          }
          out.add(new Arrival(p, next, c, t, prompt, output, cancelAfter, maxTokens));
          next += exponentialNanos(random, phase.ratePerSecond());
        }
      }
      at = end;
    }
    return out;
  }

  /** How one arrival ends when served on arrival at full speed, and the tokens it costs. */
  record ServedOnArrivalCost(Ending ending, long tokens) {}

  static ServedOnArrivalCost servedOnArrival(Arrival a, SimulatedLlmUpstream.Settings s) {
    long prefillPerToken = s.prefillPerInputToken().toNanos();
    long decode = s.decodePerOutputToken().toNanos();
    int prompt =
        SimulatedLlmUpstream.promptTokens(
            body(a.promptTokens(), a.outputTokens(), a.maxTokens()).length, s);
    int output = Math.min(a.outputTokens(), s.maxOutputTokens());
    long prefill = prefillPerToken * prompt;
    long lastToken = prefill + (long) (output - 1) * decode;
    long deadline = a.requestClass().deadline().toNanos();
    long leaves = Math.min(deadline, a.cancelAfterNanos());
    if (leaves > lastToken) {
      return new ServedOnArrivalCost(Ending.COMPLETED, prompt + output);
    }
    long generated = leaves < prefill ? 0 : Math.min(output, 1 + (leaves - prefill) / decode);
    return new ServedOnArrivalCost(
        a.cancelAfterNanos() < deadline ? Ending.CANCELLED : Ending.DEADLINE, prompt + generated);
  }

  private static long exponentialNanos(SplittableRandom random, double rate) {
    return (long) (-Math.log(1 - random.nextDouble()) / rate * 1e9);
  }

  private static <T> T pick(
      SplittableRandom random, List<T> items, ToDoubleFunction<T> share, double shareSum) {
    double x = random.nextDouble() * shareSum;
    for (T item : items) {
      x -= share.applyAsDouble(item);
      if (x < 0) {
        return item;
      }
    }
    return items.get(items.size() - 1);
  }

  private static int uniform(SplittableRandom random, int lo, int hi) {
    return lo + random.nextInt(hi - lo + 1);
  }

  /** The body an arrival sends (a chat request of about {@code promptTokens} tokens). */
  public static byte[] body(int promptTokens, int outputTokens, int maxTokens) {
    // " the" is one BPE token of 4 bytes, so the upstream's bytes/4 and Sluice's tokenizer agree
    // roughly on the prompt size.
    StringBuilder b = new StringBuilder(promptTokens * 4 + 128);
    b.append("{\"model\":\"sim\",\"stream\":true,\"max_tokens\":")
        .append(maxTokens)
        .append(",\"sim_output_tokens\":")
        .append(outputTokens)
        .append(",\"messages\":[{\"role\":\"user\",\"content\":\"");
    b.append(" the".repeat(Math.max(1, promptTokens - 24)));
    b.append("\"}]}");
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }
}
