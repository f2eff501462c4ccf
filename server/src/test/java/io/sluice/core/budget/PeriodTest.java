package io.sluice.core.budget;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Billing periods: local midnights whatever the shift, weeks, months, rolling slices. */
class PeriodTest {
  private static final ZoneId NEW_YORK = ZoneId.of("America/New_York");

  private static Period.Calendar day(ZoneId z) {
    return new Period.Calendar(Period.Unit.DAY, z, DayOfWeek.MONDAY);
  }

  private static Instant local(String dateTime, ZoneId z) {
    return LocalDateTime.parse(dateTime).atZone(z).toInstant();
  }

  @ParameterizedTest
  @CsvSource({
    "2026-03-08T12:00, 23", // spring forward: the day has 23 hours
    "2026-11-01T12:00, 25", // fall back: 25
    "2026-06-15T00:00, 24",
    "2026-06-15T23:59:59, 24"
  })
  void day_followsLocalMidnightsAcrossDaylightSaving(String at, long hours) {
    Period.Window w = day(NEW_YORK).at(local(at, NEW_YORK));

    assertThat(w.length()).isEqualTo(Duration.ofHours(hours));
    assertThat(w.start().atZone(NEW_YORK).toLocalTime()).isEqualTo(LocalTime.MIDNIGHT);
    assertThat(w.end().atZone(NEW_YORK).toLocalTime()).isEqualTo(LocalTime.MIDNIGHT);
    assertThat(w.id()).isEqualTo("d:" + at.substring(0, 10));
  }

  @Test
  void day_whereMidnightIsSkipped_startsAtTheZonesFirstInstant() {
    ZoneId santiago = ZoneId.of("America/Santiago");
    // Chile moves its clocks from 24:00 to 01:00 on the first Sunday of September
    Period.Window w = day(santiago).at(local("2026-09-06T12:00", santiago));

    assertThat(w.start().atZone(santiago).toLocalTime()).isEqualTo(LocalTime.of(1, 0));
    assertThat(w.length()).isEqualTo(Duration.ofHours(23));
    Period.Window before = day(santiago).at(w.start().minusMillis(1));
    assertThat(before.end()).isEqualTo(w.start());
  }

  @Test
  void stamp_isRfc3339_withTheZonesOffsetAtThatInstant_whereMidnightIsSkippedToo() {
    ZoneId santiago = ZoneId.of("America/Santiago");
    Period.Calendar d = day(santiago);
    // the day before the shift ends at the shifted day's first instant, 01:00 at -03:00
    Period.Window before = d.at(local("2026-09-05T12:00", santiago));
    assertThat(d.stamp(before.end())).isEqualTo("2026-09-06T01:00:00-03:00");
    assertThat(Instant.parse("2026-09-06T04:00:00Z")).isEqualTo(before.end());
    // in winter the same zone is at -04:00
    assertThat(d.stamp(d.at(local("2026-07-01T12:00", santiago)).end()))
        .isEqualTo("2026-07-02T00:00:00-04:00");
    assertThat(day(ZoneOffset.UTC).stamp(Instant.parse("2026-12-06T00:00:00Z")))
        .isEqualTo("2026-12-06T00:00:00Z");
    assertThat(day(ZoneId.of("UTC")).stamp(Instant.parse("2026-12-06T00:00:00Z")))
        .isEqualTo("2026-12-06T00:00:00Z");
    assertThat(
            new Period.Rolling(Duration.ofHours(1), 60)
                .stamp(Instant.parse("2026-12-06T10:01:00Z")))
        .as("a rolling window: UTC")
        .isEqualTo("2026-12-06T10:01:00Z");
  }

  @Test
  void day_sameInstantInTwoZones_twoDifferentDays() {
    Instant t = Instant.parse("2026-12-05T03:00:00Z");
    assertThat(day(ZoneOffset.UTC).at(t).id()).isEqualTo("d:2026-12-05");
    assertThat(day(NEW_YORK).at(t).id()).isEqualTo("d:2026-12-04");
  }

  @Test
  void windows_tileTime_noGapNoOverlap() {
    for (Period p :
        new Period[] {
          day(NEW_YORK),
          new Period.Calendar(Period.Unit.WEEK, NEW_YORK, DayOfWeek.SUNDAY),
          new Period.Calendar(Period.Unit.MONTH, ZoneId.of("Asia/Kolkata"), DayOfWeek.MONDAY),
          new Period.Rolling(Duration.ofHours(24), 24)
        }) {
      Instant t = Instant.parse("2026-01-01T00:00:00Z");
      Period.Window w = p.at(t);
      for (int i = 0; i < 400; i++) {
        Period.Window next = p.at(w.end());
        assertThat(next.start()).isAfterOrEqualTo(w.start());
        if (!w.rolling()) {
          assertThat(next.start()).isEqualTo(w.end());
        }
        assertThat(next.id()).isNotEqualTo(w.id());
        assertThat(p.at(w.end().minusMillis(1)).id()).isEqualTo(w.id());
        w = next;
      }
    }
  }

  @Test
  void week_startsOnTheConfiguredDay() {
    Instant wednesday = local("2026-12-02T10:00", NEW_YORK);
    Period.Window monday =
        new Period.Calendar(Period.Unit.WEEK, NEW_YORK, DayOfWeek.MONDAY).at(wednesday);
    Period.Window sunday =
        new Period.Calendar(Period.Unit.WEEK, NEW_YORK, DayOfWeek.SUNDAY).at(wednesday);

    assertThat(monday.id()).isEqualTo("w:2026-11-30");
    assertThat(sunday.id()).isEqualTo("w:2026-11-29");
    assertThat(monday.length()).isEqualTo(Duration.ofDays(7));
  }

  @Test
  void month_februaryAndMarchWithItsShift() {
    Period.Calendar month = new Period.Calendar(Period.Unit.MONTH, NEW_YORK, DayOfWeek.MONDAY);
    assertThat(month.at(local("2028-02-29T23:00", NEW_YORK)).length())
        .isEqualTo(Duration.ofDays(29));
    assertThat(month.at(local("2026-03-31T23:59", NEW_YORK)).length())
        .isEqualTo(Duration.ofDays(31).minusHours(1));
  }

  @Test
  void rolling_countsTheLastSlicesAndPacesOverItsLength() {
    Period.Rolling r = new Period.Rolling(Duration.ofHours(1), 12);
    Instant t = Instant.parse("2026-12-05T10:07:30Z");
    Period.Window w = r.at(t);

    assertThat(w.end()).isEqualTo(Instant.parse("2026-12-05T10:10:00Z"));
    assertThat(w.start()).isEqualTo(Instant.parse("2026-12-05T09:10:00Z"));
    assertThat(w.paceHorizon(t)).isEqualTo(Duration.ofHours(1));
    assertThat(r.at(t.plusSeconds(150)).id()).isNotEqualTo(w.id());
  }

  @Test
  void rolling_slicesBelowOneSecond_refusedNamingTheValue() {
    assertThatThrownBy(() -> new Period.Rolling(Duration.ofSeconds(10), 20))
        .hasMessageContaining("rolling slice")
        .hasMessageContaining(">= 1s");
  }
}
