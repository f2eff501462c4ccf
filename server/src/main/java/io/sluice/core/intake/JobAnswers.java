package io.sluice.core.intake;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.sluice.core.admission.Reason;
import io.sluice.core.session.AdmissionCheck;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The answers intake gives, shaped as OpenAI's Responses object ({@code id}, {@code object:
 * "response"}, {@code created_at} in epoch seconds, {@code status}, {@code background: true},
 * {@code model}, {@code output}, {@code error}), plus Sluice's own view of a waiting job under
 * {@code sluice} ({@code position}, {@code ahead_work}, {@code start_after}, {@code start_before},
 * {@code expires_at}, epoch seconds) and in headers ({@code x-sluice-position}, {@code
 * x-sluice-start-after}, {@code x-sluice-start-before}).
 */
public final class JobAnswers {
  private static final JsonFactory JSON = new JsonFactory();

  private JobAnswers() {}

  /** The answer to a job's creation or to a read or cancel of it ({@code reason}). */
  public static AdmissionCheck.Answered answer(
      Reason reason, JobStore.JobView job, StartWindow window, IntakeNote note) {
    Map<String, String> headers = new LinkedHashMap<>(4);
    if (job.status() == JobStatus.QUEUED) {
      headers.put("x-sluice-position", Long.toString(job.position()));
      headers.put("x-sluice-start-after", Long.toString(seconds(window.earliestMillis())));
      headers.put("x-sluice-start-before", Long.toString(seconds(window.latestMillis())));
    }
    return new AdmissionCheck.Answered(reason, 200, Map.copyOf(headers), body(job, window), note);
  }

  static byte[] body(JobStore.JobView job, StartWindow window) {
    byte[] result = job.result();
    if (job.status() == JobStatus.COMPLETED && result != null) {
      return result; // the upstream's Responses object, its id already the job's (JobResults)
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(384);
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      g.writeStringField("id", job.id());
      g.writeStringField("object", "response");
      g.writeNumberField("created_at", seconds(job.createdMillis()));
      g.writeStringField("status", job.status().code());
      g.writeBooleanField("background", true);
      if (job.model() != null) {
        g.writeStringField("model", job.model());
      }
      g.writeArrayFieldStart("output");
      g.writeEndArray();
      String error = job.error();
      if (error != null) {
        int colon = error.indexOf(": ");
        g.writeObjectFieldStart("error");
        g.writeStringField("code", colon < 0 ? error : error.substring(0, colon));
        g.writeStringField(
            "message",
            colon < 0 ? "the upstream failed the job: " + error : error.substring(colon + 2));
        g.writeEndObject();
      } else {
        g.writeNullField("error");
      }
      g.writeObjectFieldStart("sluice");
      g.writeNumberField("expires_at", seconds(job.expiresMillis()));
      g.writeNumberField("work_units", job.workUnits());
      if (job.status() == JobStatus.QUEUED) {
        g.writeNumberField("position", job.position());
        g.writeNumberField("ahead_work", job.aheadWork());
        g.writeNumberField("start_after", seconds(window.earliestMillis()));
        g.writeNumberField("start_before", seconds(window.latestMillis()));
      }
      g.writeEndObject();
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a byte array does not fail
    }
    return out.toByteArray();
  }

  private static long seconds(long millis) {
    return Math.floorDiv(millis, 1000L);
  }
}
