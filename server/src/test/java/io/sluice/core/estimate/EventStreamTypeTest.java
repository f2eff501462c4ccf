package io.sluice.core.estimate;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Locale;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link SseFramer#isEventStream}, the content type's test without a lower-case copy, answers as
 * {@code trim().toLowerCase(Locale.ROOT).startsWith("text/event-stream")} did: on the usual types,
 * every case, spaces, parameters, and seeded types built from the name's characters, their other
 * cases and the characters whose case mapping is not ASCII's (the long s, the Kelvin sign, the
 * dotted capital I, which lower-cases to two characters).
 */
class EventStreamTypeTest {
  private static boolean before(String type) {
    return type.trim().toLowerCase(Locale.ROOT).startsWith("text/event-stream");
  }

  @Test
  void answersAsTheLowerCaseCopyDid() {
    String[] fixed = {
      "",
      " ",
      "text/event-stream",
      "TEXT/EVENT-STREAM",
      " Text/Event-Stream; charset=utf-8",
      "text/event-strea",
      "text/event-streams",
      "application/json",
      "text/plain",
      "\ttext/event-stream\n",
      "text/event-\u017ftream",
      "\u0130text/event-stream",
      "text/event-stream\u0130",
      "te\u212at/event-stream",
      "text/event\u2010stream"
    };
    for (String t : fixed) {
      assertThat(SseFramer.isEventStream(t)).as(t).isEqualTo(before(t));
    }
    Random r = new Random(34);
    String pool = "text/event-streamTEXT/EVENT-STREAM \t;=\u017f\u0130\u212a\u00e9\u0131";
    for (int i = 0; i < 20_000; i++) {
      StringBuilder b = new StringBuilder();
      String base = r.nextBoolean() ? "text/event-stream" : "";
      for (int k = 0; k < base.length() + r.nextInt(4); k++) {
        if (k < base.length() && r.nextInt(6) != 0) {
          char c = base.charAt(k);
          b.append(r.nextBoolean() ? Character.toUpperCase(c) : c);
        } else {
          b.append(pool.charAt(r.nextInt(pool.length())));
        }
      }
      String t = (r.nextInt(4) == 0 ? " " : "") + b;
      assertThat(SseFramer.isEventStream(t)).as(t).isEqualTo(before(t));
    }
  }

  /** The first character alone answers no for most types: every one of them, as before. */
  @Test
  void everyFirstCharacterAnswersAsBefore() {
    String[] rests = {"ext/event-stream", "EXT/EVENT-STREAM; x", "pplication/json", "", "ext/e"};
    for (char c = 0; c < 0x2200; c++) {
      for (String rest : rests) {
        String t = c + rest;
        assertThat(SseFramer.isEventStream(t)).as("U+%04X%s", (int) c, rest).isEqualTo(before(t));
      }
    }
  }
}
