package io.sluice.bench;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sluice.emulator.EnvoyExtProcEmulator;
import io.sluice.emulator.FilterConfig;
import io.sluice.emulator.HttpRequest;
import io.sluice.emulator.HttpResult;
import io.sluice.upstream.SimulatedLlmUpstream;
import io.sluice.upstream.Upstream;
import io.sluice.upstream.UpstreamRequest;
import io.sluice.upstream.UpstreamResponse;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.StringJoiner;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Smoke test of a running Sluice: sends one (or {@code --count}) chat request(s) through the
 * project's Envoy ext_proc emulator to {@code --target} and prints each decision. The emulated
 * Envoy runs the recommended filter (BUFFERED request body, STREAMED response body, fail closed)
 * and per-route gRPC initial metadata for tenant, pool and class, like a route in
 * envoy-config/envoy.yaml; an admitted request is answered by an in-process simulated model.
 *
 * <p>Exit codes: 0 when every request got a decision (admitted or refused), 1 when Sluice cannot be
 * reached or a request got no decision (an ext_proc error or timeout), 2 on a usage error.
 */
@Command(
    name = "probe",
    description =
        "Send one (or --count) request(s) to a running Sluice through the emulated Envoy and print"
            + " each decision: admitted/refused, status, reason, Retry-After, decision latency.")
final class Probe implements Callable<Integer> {
  static final int UNREACHABLE = 1;

  @SuppressWarnings("NullAway.Init") // picocli sets it before call()
  @Spec
  CommandSpec spec;

  @Option(
      names = "--target",
      description = "Sluice's gRPC address host:port (default: ${DEFAULT-VALUE})",
      defaultValue = "localhost:8081")
  String target = "localhost:8081";

  @Option(
      names = "--tenant",
      description = "tenant, as gRPC initial metadata x-sluice-tenant (default: ${DEFAULT-VALUE})",
      defaultValue = "probe")
  String tenant = "probe";

  @Option(
      names = "--tenant-header",
      description =
          "send the tenant as this request header instead of metadata, e.g. x-tenant-id as the"
              + " shipped Envoy's jwt_authn sets it from a verified claim (default: none)")
  @Nullable String tenantHeader;

  @Option(
      names = "--no-tenant",
      description =
          "send no tenant at all: Sluice files the requests under its anonymous tenant"
              + " (tenants.anonymousTier)")
  boolean noTenant;

  @Option(
      names = "--concurrency",
      description =
          "requests in flight at once, 1..1000 (default: ${DEFAULT-VALUE}: one after the other);"
              + " with --count above it, shows per-tenant caps (tiers.<tier>.maxInFlight)",
      defaultValue = "1")
  int concurrency = 1;

  @Option(
      names = "--upstream-delay-ms",
      description =
          "how long the simulated model waits before answering an admitted request (default:"
              + " ${DEFAULT-VALUE}); with --concurrency, keeps requests in flight together",
      defaultValue = "0")
  long upstreamDelayMillis = 0;

  @Option(
      names = "--pool",
      description = "pool, as x-sluice-pool (default: none; the policy's route rules decide)")
  @Nullable String pool;

  @Option(
      names = "--class",
      description = "priority class, as x-sluice-class (default: none; the policy decides)")
  @Nullable String requestClass;

  @Option(
      names = "--metadata",
      description = "more per-route gRPC initial metadata, key=value (repeatable)")
  Map<String, String> metadata = new LinkedHashMap<>();

  @Option(
      names = "--path",
      description = "request path (default: ${DEFAULT-VALUE})",
      defaultValue = "/v1/chat/completions")
  String path = "/v1/chat/completions";

  @Option(
      names = "--model",
      description = "the body's model (default: ${DEFAULT-VALUE})",
      defaultValue = "gpt-4o-mini")
  String model = "gpt-4o-mini";

  @Option(
      names = "--prompt-tokens",
      description = "prompt size in tokens, about (default: ${DEFAULT-VALUE})",
      defaultValue = "200")
  int promptTokens = 200;

  @Option(
      names = "--max-tokens",
      description = "the body's max_tokens (default: ${DEFAULT-VALUE})",
      defaultValue = "64")
  int maxTokens = 64;

  @Option(
      names = "--count",
      description = "requests, one after the other, 1..10000 (default: ${DEFAULT-VALUE})",
      defaultValue = "1")
  int count = 1;

  @Option(
      names = "--message-timeout-ms",
      description =
          "the emulated Envoy's ext_proc message_timeout (default: ${DEFAULT-VALUE}; Envoy's"
              + " recommended 1000 is tight for a probe whose own JVM is cold); a request Sluice"
              + " holds in its queue needs --metadata x-sluice-max-message-timeout-ms=<ms> too",
      defaultValue = "5000")
  long messageTimeoutMillis = 5000;

  @Option(
      names = "--connect-timeout-ms",
      description = "how long to wait for Sluice's gRPC health answer (default: ${DEFAULT-VALUE})",
      defaultValue = "5000")
  long connectTimeoutMillis = 5000;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (count < 1 || count > 10_000) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--count: " + count + " (expected: 1..10000)");
    }
    if (concurrency < 1 || concurrency > 1000) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--concurrency: " + concurrency + " (expected: 1..1000)");
    }
    if (upstreamDelayMillis < 0 || upstreamDelayMillis > 600_000) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--upstream-delay-ms: " + upstreamDelayMillis + " (expected: 0..600000)");
    }
    if (noTenant && tenantHeader != null) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--no-tenant and --tenant-header: choose one");
    }
    if (promptTokens < 1 || promptTokens > 1_000_000 || maxTokens < 1) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--prompt-tokens/--max-tokens: "
              + promptTokens
              + "/"
              + maxTokens
              + " (expected: 1..1000000 and >= 1)");
    }
    FilterConfig filter =
        FilterConfig.builder()
            .requestHeaderMode(FilterConfig.HeaderMode.SEND)
            .requestBodyMode(FilterConfig.BodyMode.BUFFERED)
            .responseHeaderMode(FilterConfig.HeaderMode.SEND)
            .responseBodyMode(FilterConfig.BodyMode.STREAMED)
            .messageTimeout(Duration.ofMillis(Math.max(1, messageTimeoutMillis)))
            .failureModeAllow(false)
            .receivingNamespaces("sluice")
            .grpcAuthority("sluice")
            .build();
    ManagedChannel channel =
        NettyChannelBuilder.forTarget(target)
            .usePlaintext()
            .overrideAuthority(filter.grpcAuthority())
            .directExecutor()
            .build();
    SimulatedLlmUpstream llm =
        SimulatedLlmUpstream.create(
            new SimulatedLlmUpstream.Settings(4, Duration.ZERO, Duration.ZERO, 16, 4096, 4));
    Map<String, Long> reachedAt = new ConcurrentHashMap<>();
    Upstream tap =
        new Upstream() {
          @Override
          public CompletableFuture<UpstreamResponse> send(UpstreamRequest request) {
            request.headers().first("x-request-id").ifPresent(id -> reachedAt.put(id, now()));
            if (upstreamDelayMillis == 0) {
              return llm.send(request);
            }
            return CompletableFuture.supplyAsync(
                    () -> null,
                    CompletableFuture.delayedExecutor(upstreamDelayMillis, TimeUnit.MILLISECONDS))
                .thenCompose(x -> llm.send(request));
          }
        };
    try (EnvoyExtProcEmulator envoy = EnvoyExtProcEmulator.using(channel, filter, tap)) {
      Optional<String> unreachable = health(channel, out);
      if (unreachable.isPresent()) {
        err.println(unreachable.get());
        return UNREACHABLE;
      }
      out.printf(
          Locale.ROOT,
          "probe %s: tenant %s, pool %s, class %s, model %s, ~%d prompt tokens, max_tokens %d%s%n",
          target,
          noTenant
              ? "(none: anonymous)"
              : tenantHeader != null ? tenant + " (header " + tenantHeader + ")" : tenant,
          pool == null ? "(policy decides)" : pool,
          requestClass == null ? "(policy decides)" : requestClass,
          model,
          promptTokens,
          maxTokens,
          concurrency > 1 ? ", " + concurrency + " at once" : "");
      int noDecision = 0;
      Map<String, Integer> verdicts = new java.util.TreeMap<>();
      java.util.concurrent.Semaphore inFlight = new java.util.concurrent.Semaphore(concurrency);
      List<CompletableFuture<HttpResult>> sent = new ArrayList<>();
      long[] started = new long[count + 1];
      for (int i = 1; i <= count; i++) {
        inFlight.acquire();
        started[i] = now();
        CompletableFuture<HttpResult> f = envoy.sendAsync(request("probe-" + i));
        f.whenComplete((r, e) -> inFlight.release());
        sent.add(f);
      }
      for (int i = 1; i <= count; i++) {
        HttpResult r = await(sent.get(i - 1));
        Long reached = reachedAt.remove("probe-" + i);
        Decision d = Decision.of(r, reached == null ? -1 : reached - started[i]);
        out.println((count > 1 ? "[" + i + "] " : "") + d.line());
        verdicts.merge(
            d.verdict() + (d.verdict().equals("refused") ? " " + d.reason() : ""), 1, Integer::sum);
        if (!d.answered()) {
          noDecision++;
        }
      }
      if (count > 1) {
        StringJoiner j = new StringJoiner(", ", "summary: ", "");
        verdicts.forEach((k, n) -> j.add(k + " " + n));
        out.println(j);
      }
      out.flush();
      if (noDecision > 0) {
        err.printf(
            Locale.ROOT,
            "%d of %d request(s) got no decision from Sluice at %s (see the lines above)%n",
            noDecision,
            count,
            target);
        return UNREACHABLE;
      }
      return 0;
    } finally {
      channel.shutdownNow();
      channel.awaitTermination(5, TimeUnit.SECONDS);
      llm.close();
    }
  }

  private HttpRequest request(String id) {
    StringBuilder body = new StringBuilder(promptTokens * 4 + 160);
    body.append("{\"model\":\"")
        .append(model.replace("\\", "\\\\").replace("\"", "\\\""))
        .append("\",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"max_tokens\":")
        .append(maxTokens)
        .append(",\"messages\":[{\"role\":\"user\",\"content\":\"");
    // " the" is one BPE token of 4 bytes: the body's size in tokens is about --prompt-tokens
    body.append(" the".repeat(promptTokens)).append("\"}]}");
    HttpRequest.Builder b = HttpRequest.post(path, body.toString()).requestId(id);
    if (noTenant) {
      // nothing: the anonymous tenant
    } else if (tenantHeader != null) {
      b.header(tenantHeader, tenant);
    } else {
      b.routeGrpcInitialMetadata("x-sluice-tenant", tenant);
    }
    if (pool != null) {
      b.routeGrpcInitialMetadata("x-sluice-pool", pool);
    }
    if (requestClass != null) {
      b.routeGrpcInitialMetadata("x-sluice-class", requestClass);
    }
    metadata.forEach(b::routeGrpcInitialMetadata);
    return b.build();
  }

  /** The gRPC health check: empty when Sluice answered, else the message to print. */
  private Optional<String> health(ManagedChannel channel, PrintWriter out) {
    try {
      HealthCheckResponse h =
          HealthGrpc.newBlockingStub(channel)
              .withDeadlineAfter(Math.max(1, connectTimeoutMillis), TimeUnit.MILLISECONDS)
              .check(HealthCheckRequest.getDefaultInstance());
      if (h.getStatus() != HealthCheckResponse.ServingStatus.SERVING) {
        out.println("note: Sluice's gRPC health is " + h.getStatus() + " (probing anyway)");
      }
      return Optional.empty();
    } catch (StatusRuntimeException e) {
      Status.Code code = e.getStatus().getCode();
      if (code == Status.Code.UNIMPLEMENTED) {
        return Optional.empty(); // a server without the health service: the probe decides
      }
      String why =
          code == Status.Code.DEADLINE_EXCEEDED
              ? "no answer within " + connectTimeoutMillis + " ms"
              : code
                  + (e.getStatus().getDescription() == null
                      ? ""
                      : ": " + e.getStatus().getDescription());
      return Optional.of(
          String.format(
              Locale.ROOT,
              "sluice-bench probe: cannot reach Sluice at %s (gRPC health check: %s). Is the"
                  + " server running and is %s its gRPC (ext_proc) address? The default is"
                  + " localhost:8081; the admin HTTP port (8080) does not speak gRPC.",
              target,
              why,
              target));
    }
  }

  private static HttpResult await(CompletableFuture<HttpResult> f) throws InterruptedException {
    try {
      return f.get(60, TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("the emulated exchange did not finish within 60 s", e);
    }
  }

  private static long now() {
    return System.nanoTime();
  }

  /**
   * One request's decision as the emulated Envoy saw it.
   *
   * @param verdict {@code admitted}, {@code refused} or {@code no decision}
   * @param status the HTTP status the client got
   * @param reason {@code x-sluice-reason} (or Envoy's response code details when Sluice gave none)
   * @param retryAfter the {@code retry-after} header, if any
   * @param decisionNanos from the start of the request until it reached the model (admitted) or its
   *     refusal's headers went to the client
   * @param sluice the decision fields Sluice wrote to dynamic metadata (namespace {@code sluice})
   * @param message the refusal's JSON body, if any
   */
  record Decision(
      String verdict,
      int status,
      String reason,
      Optional<String> retryAfter,
      long decisionNanos,
      Map<String, String> sluice,
      String message) {

    static Decision of(HttpResult r, long reachedUpstreamNanos) {
      Map<String, String> fields = new LinkedHashMap<>();
      Value ns = r.dynamicMetadata().getFieldsMap().get("sluice");
      if (ns != null && ns.hasStructValue()) {
        Struct s = ns.getStructValue();
        s.getFieldsMap().forEach((k, v) -> fields.put(k, text(v)));
      }
      Optional<String> sluiceReason = r.header("x-sluice-reason");
      boolean reached = reachedUpstreamNanos >= 0;
      boolean refused =
          !reached
              && r.status() >= 400
              && (sluiceReason.isPresent() || "reject".equals(fields.get("decision")));
      String verdict = reached ? "admitted" : refused ? "refused" : "no decision";
      long latency =
          reached ? reachedUpstreamNanos : r.timeToResponseHeaders().orElse(r.total()).toNanos();
      String reason = sluiceReason.orElse(fields.getOrDefault("reason", r.responseCodeDetails()));
      String message = refused || !reached ? r.bodyUtf8() : "";
      return new Decision(
          verdict, r.status(), reason, r.header("retry-after"), latency, fields, message);
    }

    boolean answered() {
      return !verdict.equals("no decision");
    }

    String line() {
      StringBuilder b =
          new StringBuilder(
              String.format(
                  Locale.ROOT,
                  "%-8s status %d  reason %s  retry-after %s  decision %.1f ms",
                  verdict,
                  status,
                  reason,
                  retryAfter.map(s -> s + " s").orElse("-"),
                  decisionNanos / 1e6));
      if (!sluice.isEmpty()) {
        StringJoiner j = new StringJoiner(" ", "  sluice{", "}");
        sluice.forEach((k, v) -> j.add(k + "=" + v));
        b.append(j);
      }
      if (!message.isBlank()) {
        b.append(System.lineSeparator()).append("         body: ").append(message.strip());
      }
      return b.toString();
    }

    private static String text(Value v) {
      return switch (v.getKindCase()) {
        case STRING_VALUE -> v.getStringValue();
        case NUMBER_VALUE ->
            v.getNumberValue() == Math.rint(v.getNumberValue())
                ? Long.toString((long) v.getNumberValue())
                : Double.toString(v.getNumberValue());
        case BOOL_VALUE -> Boolean.toString(v.getBoolValue());
        default -> v.toString().strip();
      };
    }
  }
}
