/* web_linkcheck: links every object of cutover_web (plans/, state/, web/)
 * whole against cutover_base and nothing else, so the build fails when the
 * web side reaches the engine, the steps, the broker or the flag client
 * (DESIGN.md §4). It runs nothing. */
int
main(void)
{
	return 0;
}
