/* linkcheck: the program behind the link checks in CMakeLists.txt, which
 * link one library's every object whole against only the libraries below
 * it, so that the build fails when a lower layer calls into a higher one:
 * cutover_base_linkcheck links cutover_base alone (base reaches nothing of
 * plans/, state/, web/ or the core), cutover_web_linkcheck links
 * cutover_web with cutover_base (the web side reaches neither the engine,
 * the steps, the broker nor the flag client: DESIGN.md §4). It runs
 * nothing. */
int
main(void)
{
	return 0;
}
