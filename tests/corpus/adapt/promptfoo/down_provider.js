// evalkit fixture: an echo provider whose backend is down for one prompt, so promptfoo records an errored row.
class DownForJapan {
  id() {
    return 'down-for-japan';
  }
  async callApi(prompt) {
    if (prompt.includes('Japan')) {
      return { error: 'connection refused (simulated outage for Japan)' };
    }
    return { output: prompt };
  }
}
module.exports = DownForJapan;
