/* The device tensors of destroyed buffers, reused as the next execution's outputs of the same size (pjrt_internal.h explains why). */
#include "nrt/nrt_neuronsim.h"
#include "pjrt_internal.h"

void pjrt_pool_init(pjrt_device_t *dev)
{
	pthread_mutex_init(&dev->pool.lock, NULL);
	dev->pool.n = 0;
	dev->pool.bytes = 0;
}

void pjrt_pool_put(pjrt_device_t *dev, nrt_tensor_t **t)
{
	if (!*t)
		return;
	pjrt_pool_t *p = &dev->pool;
	size_t size = nrt_tensor_get_size(*t);
	pthread_mutex_lock(&p->lock);
	if (p->n < PJRT_POOL_MAX && size) {
		p->t[p->n] = *t;
		p->size[p->n++] = size;
		p->bytes += size;
		*t = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	if (*t)
		nrt_tensor_free(t);
}

nrt_tensor_t *pjrt_pool_take(pjrt_device_t *dev, size_t size)
{
	pjrt_pool_t *p = &dev->pool;
	nrt_tensor_t *t = NULL;
	pthread_mutex_lock(&p->lock);
	/* the latest destroyed first: the step before's buffer of that size */
	for (uint32_t i = p->n; i-- > 0;)
		if (p->size[i] == size) {
			t = p->t[i];
			p->bytes -= size;
			p->t[i] = p->t[--p->n];
			p->size[i] = p->size[p->n];
			break;
		}
	pthread_mutex_unlock(&p->lock);
	return t;
}

bool pjrt_pool_drain(pjrt_device_t *dev)
{
	pjrt_pool_t *p = &dev->pool;
	pthread_mutex_lock(&p->lock);
	uint32_t n = p->n;
	nrt_tensor_t *t[PJRT_POOL_MAX];
	for (uint32_t i = 0; i < n; i++)
		t[i] = p->t[i];
	p->n = 0;
	p->bytes = 0;
	pthread_mutex_unlock(&p->lock);
	for (uint32_t i = 0; i < n; i++)
		nrt_tensor_free(&t[i]);
	return n > 0;
}

size_t pjrt_pool_bytes(const pjrt_client_t *c)
{
	size_t b = 0;
	for (uint32_t i = 0; i < c->n_devices; i++) {
		pjrt_pool_t *p = &c->devices[i].pool;
		pthread_mutex_lock(&p->lock);
		b += p->bytes;
		pthread_mutex_unlock(&p->lock);
	}
	return b;
}

void pjrt_pool_make_room(pjrt_device_t *dev, size_t size)
{
	pthread_mutex_lock(&dev->pool.lock);
	bool some = dev->pool.n > 0;
	pthread_mutex_unlock(&dev->pool.lock);
	nrt_neuronsim_mem_usage_t u;
	if (some && nrt_neuronsim_get_mem_usage(&u) == NRT_SUCCESS && u.total - u.in_use < 2 * (uint64_t)size)
		pjrt_pool_drain(dev);
}
