package io.sluice.config;

import java.util.Locale;
import java.util.Set;

/** The {@code responses} section: the headers added to admitted requests. */
final class ResponsesSection {
  private ResponsesSection() {}

  static SluiceConfig.Responses read(Node n) {
    SluiceConfig.Responses d = SluiceConfig.Responses.DEFAULTS;
    Node resp =
        n.only(Set.of("decisionHeader", "estimateHeader", "deadlineHeader", "upstreamTimeout"));
    String deadlineHeader =
        resp.get("deadlineHeader").string(d.deadlineHeader()).trim().toLowerCase(Locale.ROOT);
    if (!deadlineHeader.isEmpty() && !Node.HEADER_NAME.matcher(deadlineHeader).matches()) {
      resp.get("deadlineHeader").invalid(deadlineHeader, "an HTTP header name, or \"\" for none");
    }
    return new SluiceConfig.Responses(
        resp.get("decisionHeader").bool(d.decisionHeader()),
        resp.get("estimateHeader").bool(d.estimateHeader()),
        deadlineHeader,
        resp.get("upstreamTimeout").bool(d.upstreamTimeout()));
  }
}
