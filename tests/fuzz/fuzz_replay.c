/* main() for fuzz targets in builds without libFuzzer: replays the given
 * files and directories (libFuzzer-style "-flag" arguments are ignored), so
 * the seed corpus and past crashes run in every test run. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	uint8_t *buf = NULL;
	size_t size = 0, cap = 0, n;
	do {
		if (size == cap) {
			cap = cap ? cap * 2 : 4096;
			uint8_t *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nb;
		}
		n = fread(buf + size, 1, cap - size, f);
		size += n;
	} while (n > 0);
	int bad = ferror(f);
	fclose(f);
	if (!bad)
		LLVMFuzzerTestOneInput(buf, size);
	free(buf);
	return bad ? -1 : 0;
}

static int replay(const char *path, int *count)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return replay_file(path);
	}
	struct dirent **names;
	int n = scandir(path, &names, NULL, alphasort); /* sorted: reproducible */
	if (n < 0) {
		perror(path);
		return -1;
	}
	int rc = 0;
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			char sub[4096];
			snprintf(sub, sizeof(sub), "%s/%s", path, names[i]->d_name);
			if (replay(sub, count))
				rc = -1;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int count = 0, rc = 0;
	for (int i = 1; i < argc; i++)
		if (argv[i][0] != '-' && replay(argv[i], &count))
			rc = 1;
	printf("replayed %d inputs\n", count);
	return rc;
}
