package io.sluice.core.intake;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** What a dispatched job sends upstream, and how the upstream's answer ends it. */
class JobResultsTest {
  private static final String ID = "resp_0123456789abcdef0123456789abcdef";

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void forUpstream_setsBackgroundFalse_keepsTheRest() {
    String out =
        new String(
            JobResults.forUpstream(utf8("{\"model\":\"m1\",\"input\":\"hi\",\"background\":true}")),
            StandardCharsets.UTF_8);
    assertThat(out).isEqualTo("{\"model\":\"m1\",\"input\":\"hi\",\"background\":false}");
  }

  @Test
  void ok_isCompleted_withTheUpstreamsObject_itsIdTheJobs() {
    JobResults.Outcome o =
        JobResults.of(
            ID,
            200,
            utf8("{\"id\":\"resp_up\",\"object\":\"response\",\"status\":\"completed\"}"),
            null,
            1000);
    assertThat(o.status()).isEqualTo(JobStatus.COMPLETED);
    assertThat(new String(o.result(), StandardCharsets.UTF_8))
        .isEqualTo("{\"id\":\"" + ID + "\",\"object\":\"response\",\"status\":\"completed\"}");
    assertThat(o.event()).isEqualTo("completed");
  }

  @Test
  void tooLarge_isFailed_neverTruncated() {
    JobResults.Outcome o = JobResults.of(ID, 200, null, null, 1000);
    assertThat(o.status()).isEqualTo(JobStatus.FAILED);
    assertThat(o.result()).isNull();
    assertThat(o.error()).startsWith("result_too_large: ").contains("1000 bytes");
    // the id replaced makes it larger than the bound: failed as well
    JobResults.Outcome grown = JobResults.of(ID, 200, utf8("{\"id\":\"r\"}"), null, 12);
    assertThat(grown.error()).startsWith("result_too_large: ");
  }

  @Test
  void nonOk_isFailed_withTheUpstreamsStatusAndReason() {
    JobResults.Outcome o =
        JobResults.of(ID, 502, utf8("{\"error\":{\"code\":\"engine_down\"}}"), null, 1000);
    assertThat(o.status()).isEqualTo(JobStatus.FAILED);
    assertThat(o.error()).isEqualTo("upstream_error: the upstream answered 502 (engine_down)");
    assertThat(JobResults.of(ID, 500, utf8("oops"), null, 1000).error())
        .isEqualTo("upstream_error: the upstream answered 500");
    assertThat(JobResults.of(ID, 403, utf8("{}"), "dispatch_marker_invalid", 1000).error())
        .isEqualTo("upstream_error: the upstream answered 403 (dispatch_marker_invalid)");
    assertThat(JobResults.of(ID, 200, utf8("not json"), null, 1000).error())
        .startsWith("upstream_invalid: ");
  }

  @Test
  void sluicesOwnRefusalForRoom_doesNotEndTheJob() {
    JobResults.Outcome o = JobResults.of(ID, 429, utf8("{}"), "pool_saturated", 1000);
    assertThat(o.status()).isNull();
    assertThat(o.event()).isEqualTo("returned");
    assertThat(JobResults.of(ID, 503, utf8("{}"), "shutting_down", 1000).status()).isNull();
    // an upstream's own 429 (no x-sluice-reason) ends it
    assertThat(JobResults.of(ID, 429, utf8("{}"), null, 1000).status()).isEqualTo(JobStatus.FAILED);
  }
}
