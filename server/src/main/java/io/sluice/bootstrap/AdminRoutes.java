package io.sluice.bootstrap;

import io.sluice.config.SluiceConfig;
import io.sluice.feature.budget.BudgetsEndpoint;
import io.sluice.rls.HttpReply;
import io.sluice.rls.RlsModule;
import java.io.IOException;
import java.util.Map;
import java.util.function.Supplier;

/**
 * What the admin HTTP port serves: {@code /metrics}, the probes {@code /healthz} and {@code
 * /readyz}, {@code /config}, {@code /debug/*}, and with the rate limit service on its {@code
 * /healthcheck}, {@code /rlconfig} and {@code POST /json} (as envoyproxy/ratelimit).
 */
final class AdminRoutes {
  private final ProcessServices services;
  private final Supplier<SluiceConfig> config;

  private AdminRoutes(ProcessServices services, Supplier<SluiceConfig> config) {
    this.services = services;
    this.config = config;
  }

  /**
   * The admin port of {@code server.admin}, with the control listener of {@code
   * server.admin.control} attached when it has a port (a port taken: a {@link PortBindException}).
   */
  static AdminHttpServer bind(SluiceConfig.Server s) throws IOException {
    AdminHttpServer admin;
    try {
      admin = new AdminHttpServer(s.adminHost(), s.adminPort());
    } catch (IOException e) {
      throw PortBindException.of(
          "admin HTTP",
          s.adminHost(),
          s.adminPort(),
          "HOST / PORT",
          "server.admin.host / .port",
          e);
    }
    SluiceConfig.AdminControl c = s.adminControl();
    if (c.ownListener()) {
      try {
        admin.attachControl(new AdminHttpServer(c.host(), c.port()));
      } catch (IOException e) {
        admin.close();
        throw PortBindException.of(
            "admin control HTTP",
            c.host(),
            c.port(),
            "server.admin.control.host",
            "server.admin.control.port",
            e);
      }
    }
    return admin;
  }

  /** Mounts every route on {@code admin}; {@code config} is the config in force. */
  static void mount(
      AdminHttpServer admin,
      ProcessServices services,
      Readiness readiness,
      Supplier<SluiceConfig> config) {
    AdminRoutes r = new AdminRoutes(services, config);
    admin
        .route(
            "/metrics",
            "Prometheus metrics (docs/metrics.md)",
            () -> {
              // the windows a scrape shows rotate at its instant
              if (services.registry.config().clock() instanceof MeterClock c) {
                c.refresh();
              }
              return new AdminHttpServer.Reply(
                  200, "text/plain; version=0.0.4; charset=utf-8", services.registry.scrape());
            })
        .probe(
            "/healthz",
            "liveness: 200 while the process answers and the heap is fine",
            readiness::liveness)
        .probe(
            "/readyz",
            "readiness: 200 while serving, with details; 503 and why otherwise",
            readiness::readiness)
        .routeWithQuery(
            "/config",
            "the effective config, redacted: JSON, or YAML with ?format=yaml; either validates as"
                + " a policy file",
            r::configReply)
        .routeWithQuery(
            "/budgets",
            "budgets over billing periods for ?tenant=<id>[&tier=&route=&model=]: spend, remaining,"
                + " reset, forecast (JSON)",
            query -> r.budgets(query))
        .routeWithQuery(
            "/debug/estimates",
            "the learned output reserve per key, most used first (JSON; ?limit=, default 100)",
            query -> DebugEstimates.reply(services.reserves, query))
        .route(
            "/debug/queues",
            "per pool and class: in flight, queued, oldest wait (JSON)",
            () ->
                AdminHttpServer.Reply.json(
                    200,
                    DebugQueues.render(
                        services.controller,
                        services.ticker.nanos(),
                        (pool, node) -> {
                          if (services.store.shares != null) {
                            services.store.shares.describe(pool, node);
                          }
                        })));
    RlsModule rls = services.store.rls;
    if (rls != null) {
      admin
          .route(
              "/healthcheck",
              "rate limit service health (as envoyproxy/ratelimit)",
              () -> r.reply(rls.healthcheck()))
          .route("/rlconfig", "the loaded rate limit descriptors", () -> r.reply(rls.rlconfig()));
      // POST /json changes rate limit state: on the control listener when it has one (its bind
      // address says who may call), else here to loopback callers only; or nowhere
      SluiceConfig.AdminControl c = config.get().server().adminControl();
      AdminHttpServer control = admin.control();
      if (c.enabled()) {
        AdminHttpServer on = control != null ? control : admin;
        on.describe(
                "/json",
                "POST a RateLimitRequest in JSON, get the decision (as envoyproxy/ratelimit)"
                    + (control != null ? "" : "; loopback callers only"))
            .routeWithBody("/json", body -> rls.json(body).thenApply(r::reply), control == null);
      }
    }
  }

  /** {@code GET /budgets?tenant=...}: the budgets feature's endpoint. */
  private AdminHttpServer.Reply budgets(Map<String, String> query) {
    BudgetsEndpoint.Reply b =
        BudgetsEndpoint.reply(config.get(), services.store.stores, query, services.options.clock());
    return AdminHttpServer.Reply.json(b.status(), b.json());
  }

  /** {@code GET /config[?format=json|yaml]}: JSON unless asked for YAML. */
  private AdminHttpServer.Reply configReply(Map<String, String> query) {
    String f = query.getOrDefault("format", "json");
    ConfigView.Format format = ConfigView.Format.parse(f);
    if (format == null) {
      return AdminHttpServer.Reply.text(
          400, "format: " + services.redactor.scrub(f) + " (expected: json or yaml)\n");
    }
    String body = ConfigView.render(config.get(), services.redactor, format);
    return format == ConfigView.Format.YAML
        ? new AdminHttpServer.Reply(200, "application/yaml; charset=utf-8", body)
        : AdminHttpServer.Reply.json(200, body);
  }

  private AdminHttpServer.Reply reply(HttpReply r) {
    return new AdminHttpServer.Reply(
        r.status(), r.contentType(), services.redactor.scrubOrNull(r.body()));
  }
}
