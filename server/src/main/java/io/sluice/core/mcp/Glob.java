package io.sluice.core.mcp;

/** A tool-name glob: {@code *} any run of characters, {@code ?} one (at most name × glob steps). */
final class Glob {
  private Glob() {}

  static boolean matches(String glob, String s) {
    int g = 0;
    int i = 0;
    int star = -1;
    int mark = 0;
    while (i < s.length()) {
      if (g < glob.length() && (glob.charAt(g) == '?' || glob.charAt(g) == s.charAt(i))) {
        g++;
        i++;
      } else if (g < glob.length() && glob.charAt(g) == '*') {
        star = g++;
        mark = i;
      } else if (star >= 0) {
        g = star + 1;
        i = ++mark;
      } else {
        return false;
      }
    }
    while (g < glob.length() && glob.charAt(g) == '*') {
      g++;
    }
    return g == glob.length();
  }
}
