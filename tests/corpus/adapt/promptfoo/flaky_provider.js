// evalkit fixture: an echo provider that lower-cases the city on 8 of every 10 calls for France, so repeated
// runs of the france test pass 2 of 10 times whatever order promptfoo calls it in.
let franceCalls = 0;
class FlakyForFrance {
  id() {
    return 'flaky-for-france';
  }
  async callApi(prompt) {
    if (prompt.includes('France')) {
      franceCalls += 1;
      if (franceCalls % 10 < 8) {
        return { output: prompt.replace('Paris', 'paris') };
      }
    }
    return { output: prompt };
  }
}
module.exports = FlakyForFrance;
